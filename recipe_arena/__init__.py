"""recipe-arena: a fair arena for frontier LLM post-training recipes."""

__version__ = "0.1.0"
