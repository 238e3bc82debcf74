"""The package version, in a module of its own so that any layer can read it without
importing the package facade (toolsift/__init__.py resolves the engine lazily)."""

__version__ = "0.1.0"
