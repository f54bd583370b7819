"""The engine interface the engines implement, defined by the core that drives them
(``core.engine``): requests, completions, statistics and the ``Engine`` protocol."""

from recipe_arena.core.engine import Completion as Completion
from recipe_arena.core.engine import Engine as Engine
from recipe_arena.core.engine import EngineError as EngineError
from recipe_arena.core.engine import EngineStats as EngineStats
from recipe_arena.core.engine import GenerationRequest as GenerationRequest
from recipe_arena.core.engine import SamplingParams as SamplingParams
