"""cli.construct_import: construct's package without construct.debug, whole on first need."""

from __future__ import annotations

from tests.reliability.process import run_python

# The names, submodules and star-import of the package after a plain `import construct`.
_SURVEY = (
    "import sys, construct;"
    "star = {}; exec('from construct import *', star);"
    "print(sorted(n for n in vars(construct) if n not in ('__builtins__', '__cached__')),"
    " sorted(star), construct.__version__,"
    " sorted(m for m in sys.modules if m.startswith('construct')))"
)


def test_serve_imports_construct_core_without_its_debugger(tmp_path):
    code = (
        "import sys, trio, cli.main; trio.run = lambda *a: None;"
        "code = cli.main.main(['serve', '--log-dirs', sys.argv[1],"
        " '--listeners', 'PLAINTEXT://127.0.0.1:0']);"
        "print(code, sorted({'construct.debug', 'pdb', 'bdb', 'cmd'} & set(sys.modules)))"
    )
    assert run_python(code, str(tmp_path)) == "0 []\n"


def test_the_package_is_whole_when_later_code_imports_it():
    plain = run_python(_SURVEY)
    lean = run_python(
        "from cli.construct_import import import_without_debug; import_without_debug();"
        "import protocol.schema;" + _SURVEY
    )
    assert lean == plain
    assert "'Probe'" in plain
    assert "'construct.debug'" in plain


def test_a_name_of_construct_debug_completes_the_package():
    code = (
        "import sys; from cli.construct_import import import_without_debug;"
        "p = import_without_debug(); before = 'construct.debug' in sys.modules;"
        "from construct import Probe, Struct, Int8ub;"
        "print(before, Probe.__module__, '__getattr__' in vars(p),"
        " Struct('a' / Int8ub).parse(b'\\x07').a, isinstance(Probe(), p.Construct))"
    )
    assert run_python(code) == "False construct.debug False 7 True\n"


def test_nothing_changes_when_construct_is_already_imported():
    code = (
        "import construct, sys; from cli.construct_import import import_without_debug;"
        "print(import_without_debug() is construct, 'construct.debug' in sys.modules)"
    )
    assert run_python(code) == "True True\n"
