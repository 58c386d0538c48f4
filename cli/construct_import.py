"""construct's package imported without construct.debug, for `kmock serve`'s start-up.

`import construct` runs construct/__init__.py, which imports construct.debug (Probe,
Debugger) and with it pdb, bdb, cmd, code, codeop, glob and pprint: ~15 M instructions of a
start, and kmock uses none of them (protocol.primitives and protocol.schema need
construct.core and construct.expr). `import_without_debug()` does what __init__.py does
first, without the rest:

1. the package module is made from its own spec (`__path__`, `__spec__`, `__file__` as an
   import makes them) and put in sys.modules without running __init__.py;
2. `from construct.core import *` and `from construct.expr import *` run in its namespace,
   the first two statements of __init__.py (construct.core imports lib, expr and version);
3. a module `__getattr__` (PEP 562) runs the real __init__.py in the same module object
   the first time a name is missing (`construct.Probe`, `construct.__all__`, `dir()`), then
   removes itself: later code that imports construct sees the whole package, as after a
   plain `import construct` (tests/cli/test_construct_import.py).

While a step runs, a missing name is an AttributeError, as in a package whose __init__.py is
still running: construct.lib.binary and construct.debug do `from construct import *`
halfway through. Nothing is done when construct is already imported.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType
from typing import Any

__all__ = ["import_without_debug"]

_CORE_NAMES = "from construct.core import *\nfrom construct.expr import *\n"


def import_without_debug() -> ModuleType:
    """Import construct.core and construct.expr under a `construct` package whose
    __init__.py runs on first need; returns the package module."""
    if "construct" in sys.modules:
        return sys.modules["construct"]
    spec = importlib.util.find_spec("construct")
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError("No module named 'construct'", name="construct")
    package = importlib.util.module_from_spec(spec)
    loading = [True]

    def complete() -> None:
        """Run construct/__init__.py in the package: what a plain import would have run."""
        loading[0] = True
        try:
            spec.loader.exec_module(package)  # type: ignore[union-attr]
        finally:
            package.__dict__.pop("__getattr__", None)
            package.__dict__.pop("__dir__", None)
            loading[0] = False

    def __getattr__(name: str) -> Any:
        if loading[0]:
            raise AttributeError(f"module 'construct' has no attribute {name!r}")
        complete()
        return getattr(package, name)

    def __dir__() -> list[str]:
        complete()
        return sorted(package.__dict__)

    package.__getattr__ = __getattr__  # type: ignore[attr-defined,method-assign]
    package.__dir__ = __dir__  # type: ignore[method-assign]
    sys.modules["construct"] = package
    try:
        exec(_CORE_NAMES, package.__dict__)  # __init__.py's own first two lines
    except Exception:
        del sys.modules["construct"]
        raise
    finally:
        loading[0] = False
    return package
