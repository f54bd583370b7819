# Make a bare GPU machine (Python 3.12 with torch and transformers, no network) ready to
# run the project from this checkout: install the wheels of scripts/gpu_wheels.txt from
# a folder into a target directory and put it and the checkout on PYTHONPATH.
#
#   source scripts/gpu_setup.sh WHEEL_DIR        # on the GPU machine, from the checkout root
#   bash scripts/gpu_setup.sh --download DIR     # where PyPI is reachable: fill DIR (~20 MiB)
#
# Installs go to $GPU_DEPS (default /tmp/recipe_arena_deps) with --no-deps --no-index. A
# cache folder carried next to the checkout (./cache: the micro base model, judge and NLTK
# data) becomes RECIPE_ARENA_CACHE, so nothing is trained twice.
set -e
if [ "$1" = "--download" ]; then
    dir=${2:?usage: gpu_setup.sh --download DIR}
    mkdir -p "$dir"
    list=$(dirname "${BASH_SOURCE[0]}")/gpu_wheels.txt
    # antlr4-python3-runtime and langdetect exist only as source packages: build wheels
    src="antlr4-python3-runtime|langdetect"
    grep -v '^#' "$list" | grep -vE "^($src)==" > "$dir/binary.txt"
    python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
        --implementation cp --platform manylinux2014_x86_64 -d "$dir" -r "$dir/binary.txt"
    grep -v '^#' "$list" | grep -E "^($src)==" | xargs python3 -m pip wheel -q --no-deps -w "$dir"
    rm "$dir/binary.txt"
    du -sh "$dir"
    exit 0
fi
whl=${1:?usage: source scripts/gpu_setup.sh WHEEL_DIR}
GPU_DEPS=${GPU_DEPS:-/tmp/recipe_arena_deps}
t0=$(date +%s)
python3 -m pip install -q --no-index --no-deps --no-compile --target "$GPU_DEPS" "$whl"/*.whl
export PYTHONPATH="$GPU_DEPS:$PWD${PYTHONPATH:+:$PYTHONPATH}"
if [ -d cache ]; then
    export RECIPE_ARENA_CACHE="$PWD/cache"
fi
echo "gpu_setup: $(ls "$whl"/*.whl | wc -l) wheels into $GPU_DEPS in $(( $(date +%s) - t0 )) s"
set +e
