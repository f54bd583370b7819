"""YAML read within bounds: recipe files, study files and a run's ``config.yaml``.

YAML from someone else (a recipe folder, a study file, a run directory handed over for
``recipe-arena report``) can hold an alias "bomb" (a few hundred bytes naming a node
that names a node ... expand to billions of scalars), flow nesting deep enough that
PyYAML's recursive composer ends in a ``RecursionError`` traceback, or no end at all (a
link to ``/dev/zero``, a FIFO). ``load_bounded`` reads such a file as a stream of YAML
events first (libyaml's parser: no recursion, nothing built), counting depth and the
nodes its aliases expand to, and builds it only once that is within ``MAX_YAML_DEPTH``
and ``MAX_YAML_NODES``; every refusal is a ``YamlBoundsError`` whose message is one line.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

MAX_YAML_BYTES = 1 << 20
"""Size of one YAML file, at most (the largest shipped recipe is about 2 KB, the largest
study file about 12 KB, a run's resolved config.yaml about 6 KB)."""

MAX_YAML_DEPTH = 32
"""Nesting of one YAML file, at most (a config is at most 4 levels deep, a study 5)."""

MAX_YAML_NODES = 100_000
"""Nodes of one YAML file with its aliases expanded, at most (a shipped recipe has under
200, a study under 2,000)."""


class YamlBoundsError(ValueError):
    """A YAML file beyond the bounds, not a regular file, not UTF-8 or not YAML; the
    message is one line, without the file's name (the caller names it)."""


def load_bounded(path: Path, loader: Any = None) -> Any:
    """The YAML document at ``path``, built with ``loader`` (libyaml's safe loader by
    default) only once its size, depth and alias-expanded node count are within the
    module's bounds. Raises YamlBoundsError (one line) beyond them, for a file that is
    not a regular file, not UTF-8 text or not YAML; OSError when it cannot be read."""
    import yaml

    if not stat.S_ISREG(os.stat(path).st_mode):  # a FIFO or device would block or never end
        raise YamlBoundsError("not a regular file")
    with open(path, "rb") as f:
        data = f.read(MAX_YAML_BYTES + 1)
    if len(data) > MAX_YAML_BYTES:
        raise YamlBoundsError(f"larger than {MAX_YAML_BYTES} bytes, the most a YAML file may hold")
    try:
        text = data.decode("utf-8")
        safe = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        check_events(yaml.parse(text, Loader=safe))
        return yaml.load(text, Loader=loader or safe)  # bounded now  # noqa: S506 - safe loaders
    except UnicodeDecodeError as e:
        raise YamlBoundsError(f"not UTF-8 text (byte {e.start})") from None
    except yaml.YAMLError as e:
        raise YamlBoundsError(f"not valid YAML ({' '.join(str(e).split())})") from None


def check_events(events: Any) -> None:
    """Walk a YAML event stream, counting each open collection's nodes with its aliases
    expanded (an alias counts the nodes of what it names); YamlBoundsError past
    ``MAX_YAML_DEPTH`` levels, ``MAX_YAML_NODES`` nodes or at an alias to no complete
    node (a recursive one)."""
    import yaml

    sizes: dict[str, int] = {}  # anchor -> nodes of its subtree, once closed
    stack: list[list[Any]] = []  # open collections: [anchor, nodes so far]
    total = 0
    for event in events:
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            stack.append([event.anchor, 1])
            if len(stack) > MAX_YAML_DEPTH:
                raise YamlBoundsError(f"nests more than {MAX_YAML_DEPTH} levels deep")
            continue
        if isinstance(event, yaml.AliasEvent):
            if event.anchor not in sizes:
                raise YamlBoundsError(f"alias *{event.anchor} refers to no complete node")
            count = sizes[event.anchor]
        elif isinstance(event, yaml.ScalarEvent):
            count = 1
            if event.anchor is not None:
                sizes[event.anchor] = 1
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            anchor, count = stack.pop()
            if anchor is not None:
                sizes[anchor] = count
        else:
            continue
        if stack:
            stack[-1][1] += count
            if stack[-1][1] > MAX_YAML_NODES:
                raise YamlBoundsError(_too_many())
        else:
            total += count
            if total > MAX_YAML_NODES:
                raise YamlBoundsError(_too_many())


def _too_many() -> str:
    return (
        f"expands to more than {MAX_YAML_NODES} nodes (YAML aliases repeat what they "
        "name); write the values out or use fewer aliases"
    )
