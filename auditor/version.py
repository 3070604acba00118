"""The tool's version, in a module of its own so that modules of the package name it without importing the
package's `__init__` (which names the analysts' API: that import would close a cycle). Keep it equal to
pyproject.toml's `version`."""

__version__ = "0.1.0"
