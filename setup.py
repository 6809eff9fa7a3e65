"""Builds netui's optional C speedups (netui/_speedups.c); everything else is in pyproject.toml.

``optional=True``: without a compiler the install goes on and netui uses the pure-Python
twins of netui/speedups.py.
"""

from setuptools import Extension, setup

setup(ext_modules=[Extension("netui._speedups", ["netui/_speedups.c"], optional=True)])
