"""fire-exp: preregistered, randomized five-arm panels for runtime policies of LLM agents."""

__version__ = "0.1.0"
__all__ = ["__version__"]
