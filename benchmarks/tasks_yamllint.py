"""A development code base: yamllint 1.35.1, an application with a configuration file and a command line.

The workspace is the sdist of ``yamllint==1.35.1`` from PyPI (GPL-3.0-or-later; fetched and unpacked at
run time, never stored in this repository), pinned by sha256, plus ``notebooks/lint_ci_config.ipynb``
(written here: it lints a CI job with the package's Python API and keeps its outputs). Its shape: an
argparse command line (``run`` in ``yamllint/cli.py``) that picks a configuration (``-c``/``-d``, a project
``.yamllint``, a user-global file, else ``extends: default``) resolved by ``yamllint/config.py`` to the YAML
configurations shipped in ``yamllint/conf/`` (``default.yaml``, ``relaxed.yaml``); 23 rules, one module
each under ``yamllint/rules/`` (``ID``, ``TYPE``, ``CONF``, ``DEFAULT``, a ``check``), registered in
``yamllint/rules/__init__.py`` and run by ``yamllint/linter.py`` over ``yamllint/parser.py``'s tokens; Sphinx
docs, a CHANGELOG and tests (``tests/rules/test_indentation.py`` is 2,160 lines).

**Development** since 2026-12-06: yamllint was the held-out code base after litecli (its tasks run only to
report, its failures never read to change the loop). It was retired to the development set because its
failures are now read to change the loop; sqlite-utils (``tasks_sqlite_utils.py``) is held out in its place
(``tasks_all.py`` says which is held out).
"""

from __future__ import annotations

import re
from pathlib import Path

from tasks_common import (
    Answer,
    Cells,
    Edit,
    Sdist,
    Source,
    Task,
    check_unique,
    count_task,
    edit_task,
    line_task,
    name_term,
    number_term,
    regex_term,
    text_term,
    write_notebook,
)

PIN = Sdist("yamllint", "1.35.1", "7a003809f88324fd2c877734f2d575ee7881dd9043360657cc8049c809eba6cd")
NOTEBOOK = "notebooks/lint_ci_config.ipynb"

#: The notebook's cells; the outputs are what running them against yamllint 1.35.1 (with PyYAML and
#: pathspec) gives (tests/test_bench_codebases.py runs them to check).
NOTEBOOK_CELLS: Cells = (
    (
        "markdown",
        "# Linting the CI config\n\nWhat does yamllint say about the deploy job before we push it?",
        None,
    ),
    (
        "code",
        "from yamllint import linter\n"
        "from yamllint.config import YamlLintConfig\n"
        "\n"
        "MAX_LINE = 100  # our CI files are wider than yamllint's default\n"
        "conf = YamlLintConfig(\n"
        '    "extends: default\\n"\n'
        '    "rules:\\n"\n'
        '    f"  line-length: {{max: {MAX_LINE}}}\\n"\n'
        '    "  document-start: disable\\n"\n'
        ")\n"
        "deploy = (\n"
        '    "deploy:\\n"\n'
        '    "  image: python:3.11\\n"\n'
        '    "  only: [ main ]\\n"\n'
        '    "  interruptible: yes\\n"\n'
        '    "  script:\\n"\n'
        '    "    - pip install -r requirements.txt   \\n"\n'
        '    "    - make release\\n"\n'
        '    "  image: python:3.12\\n"\n'
        ")",
        None,
    ),
    ("code", "problems = list(linter.run(deploy, conf))\nlen(problems)", "5"),
    (
        "code",
        "[(p.line, p.rule, p.level) for p in problems]",
        "[(3, 'brackets', 'error'), (3, 'brackets', 'error'), (4, 'truthy', 'warning'), "
        "(6, 'trailing-spaces', 'error'), (8, 'key-duplicates', 'error')]",
    ),
    ("markdown", "## What fails the pipeline\n\nErrors fail the job; warnings are only shown.", None),
    (
        "code",
        'errors = [str(p) for p in problems if p.level == "error"]\nerrors',
        "['3:10: too many spaces inside brackets (brackets)', "
        "'3:15: too many spaces inside brackets (brackets)', "
        "'6:38: trailing spaces (trailing-spaces)', "
        "'8:3: duplication of key \"image\" in mapping (key-duplicates)']",
    ),
)


def build_workspace(root: Path) -> Path:
    """The workspace at ``root``: the cached sdist unpacked, and the notebook."""
    PIN.unpack(PIN.cached(), root)
    write_notebook(root, NOTEBOOK, NOTEBOOK_CELLS)
    return root


def _section(text: str, key: str) -> str:
    """The lines of a YAML configuration's rule ``key`` (``  key:`` and the deeper lines after it)."""
    lines = text.splitlines()
    start = lines.index(f"  {key}:")
    body = [lines[start]]
    for line in lines[start + 1 :]:
        if not line.startswith("    "):
            break
        body.append(line)
    return "\n".join(body)


def build_tasks(root: Path) -> list[Task]:
    """Every task, made from the workspace at ``root`` (facts read from its files and checked there)."""
    src = Source(root)
    path = src.path
    cli, config, linter, parser = (
        "yamllint/cli.py",
        "yamllint/config.py",
        "yamllint/linter.py",
        "yamllint/parser.py",
    )
    default, relaxed = "yamllint/conf/default.yaml", "yamllint/conf/relaxed.yaml"
    rules, indentation = "yamllint/rules/__init__.py", "yamllint/rules/indentation.py"
    line_length = "yamllint/rules/line_length.py"
    tasks: list[Task] = []
    add = tasks.append

    # locate
    src.has(cli, "\ndef find_project_config_filepath(path='.'):")
    add(
        Task(
            "locate-find_project_config_filepath",
            "locate",
            "Which file of this project defines the function find_project_config_filepath?",
            Answer([path(cli)], [path(config), path("tests/test_cli.py", bare=True)]),
            right=(cli, "find_project_config_filepath is defined in `cli.py`."),
            wrong=("yamllint/config.py", "tests/test_cli.py"),
            quick=True,
        )
    )
    src.has(config, "\nclass YamlLintConfigError(Exception):")
    add(
        Task(
            "locate-YamlLintConfigError",
            "locate",
            "In which file is the exception class YamlLintConfigError defined?",
            Answer([path(config)], [path(cli), path(linter), path("tests/test_config.py", bare=True)]),
            right=(config, "YamlLintConfigError lives in the yamllint.config module."),
            wrong=("yamllint/cli.py", "tests/test_config.py"),
        )
    )
    src.has(parser, "\ndef token_or_comment_generator(buffer):")
    add(
        Task(
            "locate-token_or_comment_generator",
            "locate",
            "Which file defines the function token_or_comment_generator?",
            Answer([path(parser)], [path(linter), path("tests/test_parser.py", bare=True)]),
            right=(parser, "In parser.py (yamllint/parser.py)."),
            wrong=("yamllint/linter.py", "tests/test_parser.py"),
        )
    )

    # value
    src.has(cli, "default='auto', help='format for parsing output')")
    add(
        Task(
            "value-format-default",
            "value",
            "What is the default value of the -f/--format option of yamllint's command line?",
            Answer(
                [name_term("auto")],
                [name_term("standard"), name_term("colored"), name_term("parsable"), name_term("github")],
            ),
            right=("auto", "default='auto' (it then picks github, colored or standard output)"),
            wrong=("standard", "parsable", "colored"),
            quick=True,
        )
    )
    src.has(indentation, "DEFAULT = {'spaces': 'consistent',")
    add(
        Task(
            "value-indentation-spaces",
            "value",
            "What does the spaces option of yamllint's indentation rule default to?",
            Answer([name_term("consistent")], [number_term(2), number_term(4)]),
            right=("consistent", "'consistent': the first indentation found sets the width"),
            wrong=("2", "4 spaces"),
        )
    )
    empty_max = int(
        re.search(r"DEFAULT = \{'max': (\d+),", src.text("yamllint/rules/empty_lines.py")).group(1)
    )  # type: ignore[union-attr]
    src.has(default, "\n  empty-lines: enable\n")
    add(
        Task(
            "value-empty-lines-max",
            "value",
            "By default, how many blank lines in a row does yamllint's empty-lines rule allow?",
            Answer(
                [number_term(empty_max)],
                [number_term(empty_max - 1), number_term(empty_max + 1), number_term(0)],
            ),
            right=(str(empty_max), f"max: {empty_max} (and none at the start or end of the file)"),
            wrong=(str(empty_max - 1), f"{empty_max + 1} blank lines"),
        )
    )
    src.has("pyproject.toml", 'requires-python = ">=3.8"')
    add(
        Task(
            "value-requires-python",
            "value",
            "Which Python versions does yamllint's pyproject.toml allow (its requires-python)?",
            Answer(
                [regex_term(">=3.8", r"(?<![\w.])3\.8(?![\d])")],
                [
                    regex_term("3.7", r"(?<![\w.])3\.7(?![\d])"),
                    regex_term(">=3.9", r">=\s*3\.(?!8(?!\d))\d+"),
                ],
            ),
            right=('requires-python = ">=3.8"', "Python 3.8 or newer."),
            wrong=(">=3.7", ">=3.9"),
        )
    )

    # line (computed)
    add(
        line_task(
            src,
            "line-find_files_recursively",
            cli,
            "def find_files_recursively(",
            what="find_files_recursively",
            other=src.line_of(cli, "def supports_color("),
            quick=True,
        )
    )
    add(
        line_task(
            src,
            "line-validate_rule_conf",
            config,
            "def validate_rule_conf(",
            what="validate_rule_conf",
            other=src.line_of(config, "def get_extended_config_file("),
        )
    )
    add(
        line_task(
            src,
            "line-check_scalar_indentation",
            indentation,
            "def check_scalar_indentation(",
            what="check_scalar_indentation",
            other=src.line_of(indentation, "def _check("),
        )
    )

    # count (part of a file)
    arguments = src.count(cli, r"\.add_argument\(")
    add(
        count_task(
            "count-cli-arguments",
            "count",
            "How many arguments (add_argument calls, positional ones included) does the argparse parser in "
            "yamllint/cli.py declare?",
            arguments,
            said="arguments",
            quick=True,
        )
    )
    disabled = src.count(default, r"^  [a-z-]+: disable$")
    add(
        count_task(
            "count-default-disabled",
            "count",
            "How many rules does yamllint's default configuration (yamllint/conf/default.yaml) disable?",
            disabled,
            said="rules",
        )
    )

    # cross-file
    importers = [
        f
        for f in src.files
        if f.startswith("yamllint/")
        and f.endswith(".py")
        and re.search(
            r"^from yamllint\.rules\.common import .*\bis_explicit_key\b", src.text(f), re.MULTILINE
        )
    ]
    assert sorted(importers) == ["yamllint/rules/colons.py", indentation], importers
    add(
        Task(
            "cross-is_explicit_key-importers",
            "cross-file",
            "Which modules of the yamllint package (not its tests) import is_explicit_key? Name every one.",
            Answer(
                [path("yamllint/rules/colons.py", bare=True), path(indentation, bare=True)],
                [
                    path("yamllint/rules/hyphens.py"),
                    path("yamllint/rules/commas.py"),
                    path("yamllint/rules/braces.py"),
                    path("yamllint/rules/key_duplicates.py"),
                ],
            ),
            right=(
                "yamllint/rules/colons.py and yamllint/rules/indentation.py",
                "The colons and indentation rules (rules/colons.py, rules/indentation.py).",
            ),
            wrong=("yamllint/rules/colons.py", "colons.py, indentation.py and hyphens.py"),
        )
    )
    src.has(cli, "from yamllint.config import YamlLintConfig, YamlLintConfigError")
    add(
        Task(
            "cross-cli-config-imports",
            "cross-file",
            "Which names does yamllint/cli.py import from yamllint.config?",
            Answer(
                [name_term("YamlLintConfig"), name_term("YamlLintConfigError")],
                [name_term("validate_rule_conf"), name_term("get_extended_config_file")],
            ),
            right=(
                "YamlLintConfig, YamlLintConfigError",
                "It imports `YamlLintConfig` and the exception `YamlLintConfigError`.",
            ),
            wrong=("YamlLintConfig", "YamlLintConfig, YamlLintConfigError and validate_rule_conf"),
            quick=True,
        )
    )
    testers = [f for f in src.files if f.startswith("tests/") and "get_line_indent" in src.text(f)]
    assert testers == ["tests/rules/test_common.py"], testers
    add(
        Task(
            "cross-tests-get_line_indent",
            "cross-file",
            "Which test file has the tests for get_line_indent?",
            Answer(
                [path("tests/rules/test_common.py", bare=True)],
                [
                    path("yamllint/rules/common.py"),
                    path("tests/common.py"),
                    path("tests/rules/test_comments_indentation.py", bare=True),
                ],
            ),
            right=("tests/rules/test_common.py", "test_common.py, under tests/rules"),
            wrong=("yamllint/rules/common.py", "tests/rules/test_comments_indentation.py"),
        )
    )

    # grep-read
    src.has(cli, "if 'YAMLLINT_CONFIG_FILE' in os.environ:")
    add(
        Task(
            "grep-config-env",
            "grep-read",
            "Which environment variable can hold the full path of the user-global configuration file "
            "yamllint reads?",
            Answer(
                [name_term("YAMLLINT_CONFIG_FILE")],
                [name_term("XDG_CONFIG_HOME"), name_term("YAMLLINT_CONFIG"), name_term("YAMLLINT_CONF")],
            ),
            right=("YAMLLINT_CONFIG_FILE", "$YAMLLINT_CONFIG_FILE (checked before XDG_CONFIG_HOME)"),
            wrong=("XDG_CONFIG_HOME", "YAMLLINT_CONFIG"),
        )
    )
    src.has(linter, r"if re.match(r'^#\s*yamllint disable-file\s*$', first_line):")
    src.has("docs/disable_with_comments.rst", "\n # yamllint disable-file\n")
    add(
        Task(
            "grep-disable-file",
            "grep-read",
            "Which comment, put at the top of a YAML file, makes yamllint skip that whole file?",
            Answer(
                [regex_term("# yamllint disable-file", r"yamllint\s+disable-file")],
                [
                    regex_term("# yamllint disable", r"yamllint\s+disable(?![\w-])"),
                    regex_term("disable-line", r"yamllint\s+disable-line"),
                ],
            ),
            right=("# yamllint disable-file", "Put `# yamllint disable-file` on the first line."),
            wrong=("# yamllint disable", "# yamllint disable-line"),
        )
    )
    changelog = src.text("CHANGELOG.rst")
    src.has("CHANGELOG.rst", "- Add ``--list-files`` command line option")
    before = changelog.split("- Add ``--list-files`` command line option", 1)[0]
    release = re.findall(r"^(\d+\.\d+\.\d+) \(", before, re.MULTILINE)[-1]
    major, minor, _ = (int(n) for n in release.split("."))
    assert release == "1.29.0", release
    add(
        Task(
            "grep-list-files-release",
            "grep-read",
            "In which release did yamllint add its --list-files command line option?",
            Answer(
                [regex_term(release, rf"(?<![\w.]){major}\.{minor}(?:\.0)?(?!\d|\.\d)")],
                [
                    regex_term(f"{major}.{minor - 1}", rf"(?<![\w.]){major}\.{minor - 1}(?![\d])"),
                    regex_term(f"{major}.{minor + 1}", rf"(?<![\w.]){major}\.{minor + 1}(?![\d])"),
                    regex_term("1.35", r"(?<![\w.])1\.35(?![\d])"),
                ],
            ),
            right=(release, f"It came in {release} (2023-01-10)."),
            wrong=(f"{major}.{minor - 1}.0", f"{major}.{minor + 1}.0"),
        )
    )

    # notebook (the notebook written here)
    add(
        Task(
            "nb-max-line",
            "notebook",
            f"What maximum line length does the configuration in {NOTEBOOK} allow?",
            Answer([number_term(100)], [number_term(80), number_term(120)]),
            right=("100", "MAX_LINE = 100, passed as line-length: {max: 100}"),
            wrong=("80", "120 characters"),
            quick=True,
        )
    )
    add(
        Task(
            "nb-problem-count",
            "notebook",
            "In the CI lint notebook, how many problems in all does yamllint find in the deploy job?",
            Answer([number_term(5)], [number_term(6), number_term(3)]),
            right=("5", "Five: four errors and one warning."),
            wrong=("4", "6 problems"),
        )
    )
    add(
        Task(
            "nb-warning-rule",
            "notebook",
            f"Which rule reports the one warning in {NOTEBOOK}'s lint results?",
            Answer(
                [name_term("truthy")],
                [name_term("brackets"), name_term("trailing-spaces"), name_term("key-duplicates")],
            ),
            right=("truthy", "The truthy rule (line 4, `interruptible: yes`)."),
            wrong=("brackets", "key-duplicates"),
        )
    )

    # big-file: deep in the long modules and tests
    message = src.has(indentation, "'cannot infer indentation: unexpected token'")
    assert src.text(indentation).rindex(message) > len(src.text(indentation)) * 0.95
    add(
        Task(
            "big-indentation-assertion",
            "big-file",
            "In yamllint/rules/indentation.py, what problem does check() report when _check fails an "
            "assertion? Give its message.",
            Answer(
                [text_term("cannot infer indentation")],
                [text_term("wrong indentation"), text_term("syntax error")],
            ),
            right=(
                "cannot infer indentation: unexpected token",
                "It yields a LintProblem 'cannot infer indentation: unexpected token'.",
            ),
            wrong=("wrong indentation: expected 4 but found 2", "syntax error"),
            quick=True,
        )
    )
    tests_indent = "tests/rules/test_indentation.py"
    owner = None
    for line in src.text(tests_indent).splitlines():
        if line.startswith("class "):
            owner = line.split()[1].split("(")[0]
        if line.startswith("    def test_paragraph_folded("):
            break
    assert owner == "ScalarIndentationTestCase", owner
    add(
        Task(
            "big-test-class",
            "big-file",
            f"In {tests_indent}, which test class holds test_paragraph_folded?",
            Answer(
                [name_term(owner)],
                [
                    name_term("IndentationTestCase"),
                    name_term("IndentationStackTestCase"),
                    name_term("RuleTestCase"),
                ],
            ),
            right=(owner, f"class {owner}(RuleTestCase)"),
            wrong=("IndentationTestCase", "IndentationStackTestCase"),
        )
    )
    github_test = src.text("tests/test_cli.py").split("    def test_github_actions_detection(", 1)[1]
    github_test = github_test.split("\n    def ", 1)[0]
    assert set(re.findall(r"os\.environ\['(\w+)'\] = ", github_test)) == {"GITHUB_ACTIONS", "GITHUB_WORKFLOW"}
    add(
        Task(
            "big-github-env",
            "big-file",
            "In tests/test_cli.py, which environment variables does test_github_actions_detection set?",
            Answer(
                [name_term("GITHUB_ACTIONS"), name_term("GITHUB_WORKFLOW")],
                [name_term("GITHUB_REF"), name_term("GITHUB_ENV"), name_term("TERM")],
            ),
            right=(
                "GITHUB_ACTIONS and GITHUB_WORKFLOW",
                "os.environ['GITHUB_ACTIONS'], os.environ['GITHUB_WORKFLOW']",
            ),
            wrong=("GITHUB_ACTIONS", "GITHUB_ACTIONS, GITHUB_WORKFLOW and GITHUB_REF"),
        )
    )

    # multi-hop: a fact that needs two files
    src.has(cli, "conf = YamlLintConfig('extends: default')")
    src.has(config, "'conf', f'{name}.yaml')")
    add(
        Task(
            "hop-fallback-config",
            "multi-hop",
            "If yamllint is run without -c or -d and finds no .yamllint file in the project and no "
            "~/.config/yamllint/config, which file of this project holds the configuration it uses?",
            Answer(
                [regex_term(default, r"(?<![\w-])default\.yaml\b")],
                [regex_term(relaxed, r"(?<![\w-])relaxed\.yaml\b")],
            ),
            right=(
                default,
                "It uses `extends: default`, which config.py resolves to yamllint/conf/default.yaml.",
            ),
            wrong=("yamllint/conf/relaxed.yaml", "~/.config/yamllint/config", ".yamllint"),
        )
    )
    src.has(relaxed, "extends: default\n")
    assert "max" not in _section(src.text(relaxed), "line-length")
    src.has(default, "\n  line-length: enable\n")
    line_max = int(re.search(r"DEFAULT = \{'max': (\d+),", src.text(line_length)).group(1))  # type: ignore[union-attr]
    add(
        Task(
            "hop-relaxed-line-length",
            "multi-hop",
            "With yamllint's relaxed configuration, above how many characters is a line reported as too "
            "long?",
            Answer([number_term(line_max)], [number_term(120), number_term(100)]),
            right=(
                str(line_max),
                f"relaxed.yaml keeps line-length's default max, {line_max} (as a warning).",
            ),
            wrong=("120", "100 characters"),
        )
    )
    src.has(linter, "\ndef run(input, conf, filepath=None):")
    src.has(cli, "\ndef run(argv=None):")
    add(
        Task(
            "hop-notebook-import",
            "multi-hop",
            f"{NOTEBOOK} lints with linter.run. Which file of the project defines that function?",
            Answer([path(linter)], [path(cli), path(parser), path("yamllint/__main__.py")]),
            right=(linter, "run is defined in yamllint/linter.py"),
            wrong=("yamllint/cli.py", "yamllint/__main__.py"),
            quick=True,
        )
    )

    # exact: a string quoted from the code
    too_long = src.has(line_length, "'line too long (%d > %d characters)'").strip("'")
    add(
        Task(
            "exact-line-too-long",
            "exact",
            "What message does yamllint's line-length rule report for a line that is too long? Quote it "
            "exactly.",
            Answer(
                [regex_term(too_long, r"line too long \(\S+ > \S+ characters\)")],
                [text_term("line is too long"), text_term("exceeds")],
            ),
            right=(too_long, "`line too long (81 > 80 characters)`"),
            wrong=("line is too long", "line too long (81 characters)"),
            quick=True,
        )
    )
    both = src.has(
        config,
        "'invalid config: ignore and ignore-from-file keys cannot be '\n                'used together'",
    )
    both = "".join(re.findall(r"'([^']*)'", both))
    add(
        Task(
            "exact-ignore-both",
            "exact",
            "What error message does yamllint give when a configuration sets both ignore and "
            "ignore-from-file? Quote it exactly.",
            Answer(
                [text_term(both.removeprefix("invalid config: "))],
                [text_term("ignore should contain file patterns"), text_term("mutually exclusive")],
            ),
            right=(both, f'YamlLintConfigError("{both}")'),
            wrong=(
                "invalid config: ignore should contain file patterns",
                "ignore and ignore-from-file are mutually exclusive",
            ),
        )
    )
    strict = src.has(
        cli,
        "help='return non-zero exit code on warnings '\n                             'as well as errors')",
    )
    strict = "".join(re.findall(r"'([^']*)'", strict))
    add(
        Task(
            "exact-strict-help",
            "exact",
            "What is the help text of the -s/--strict option of yamllint's command line? Quote it exactly.",
            Answer(
                [text_term(strict)],
                [text_term("output only error level problems"), text_term("treat warnings as errors")],
            ),
            right=(strict, f"help='{strict}'"),
            wrong=("output only error level problems", "treat warnings as errors"),
        )
    )

    # file-count: counted over a whole file by the grader
    registered = src.count(rules, r"^    \w+\.ID: \w+,$")
    modules = [f for f in src.files if f.startswith("yamllint/rules/") and f.endswith(".py")]
    assert registered == len(modules) - 2, (registered, modules)  # less __init__.py and common.py
    add(
        count_task(
            "fcount-rules",
            "file-count",
            "How many rules does yamllint register in yamllint/rules/__init__.py?",
            registered,
            said="rules",
            quick=True,
        )
    )
    relaxed_rules = src.count(relaxed, r"^  [a-z-]+:")
    add(
        count_task(
            "fcount-relaxed-rules",
            "file-count",
            "How many rules does yamllint/conf/relaxed.yaml configure?",
            relaxed_rules,
            said="rules",
        )
    )
    linter_tests = src.count("tests/test_linter.py", r"^    def test_")
    add(
        count_task(
            "fcount-linter-tests",
            "file-count",
            "How many test methods does tests/test_linter.py define?",
            linter_tests,
            said="test methods",
        )
    )
    raises = src.count(config, r"raise YamlLintConfigError\(")
    add(
        count_task(
            "fcount-config-raises",
            "file-count",
            "How many times does yamllint/config.py raise YamlLintConfigError?",
            raises,
            said="raises",
        )
    )

    # edit
    add(
        edit_task(
            src,
            "edit-line-length-default",
            f"Raise the default maximum of yamllint's line-length rule (its DEFAULT in {line_length}) from "
            f"{line_max} to 120.",
            [
                (
                    Edit(line_length, f"DEFAULT = {{'max': {line_max},", "DEFAULT = {'max': 120,"),
                    r"""DEFAULT\s*=\s*\{\s*(['"])max\1\s*:\s*120\s*,""",
                )
            ],
            wrong_edits=[
                [Edit(line_length, f"     max: {line_max}\n", "     max: 120\n")],
                [
                    Edit(
                        relaxed,
                        "    allow-non-breakable-inline-mappings: true\n",
                        "    allow-non-breakable-inline-mappings: true\n    max: 120\n",
                    )
                ],
            ],
            quick=True,
        )
    )
    braces = _section(src.text(relaxed), "braces") + "\n"
    assert braces.endswith("    max-spaces-inside: 1\n"), braces
    add(
        edit_task(
            src,
            "edit-relaxed-braces",
            "In the relaxed configuration (yamllint/conf/relaxed.yaml), allow up to 2 spaces inside braces "
            "(max-spaces-inside).",
            [
                (
                    Edit(relaxed, braces, braces.replace("max-spaces-inside: 1", "max-spaces-inside: 2")),
                    re.escape(braces.removesuffix(" 1\n")) + r"[ \t]*2[ \t]*\n",
                )
            ],
            wrong_edits=[
                [
                    Edit(
                        relaxed,
                        _section(src.text(relaxed), "brackets") + "\n",
                        (_section(src.text(relaxed), "brackets") + "\n").replace(
                            "max-spaces-inside: 1", "max-spaces-inside: 2"
                        ),
                    )
                ],
                [Edit(default, "\n  braces: enable\n", "\n  braces:\n    max-spaces-inside: 2\n")],
            ],
        )
    )
    add(
        edit_task(
            src,
            "edit-format-default",
            "Make parsable the default output format of yamllint's command line (the -f/--format option).",
            [
                (
                    Edit(
                        cli,
                        "default='auto', help='format for parsing output')",
                        "default='parsable', help='format for parsing output')",
                    ),
                    r"""default=(['"])parsable\1,\s*help='format for parsing output'\)""",
                )
            ],
            wrong_edits=[
                [Edit(cli, "    if args_format == 'auto':", "    if args_format == 'parsable':")],
                [
                    Edit(
                        cli,
                        "default='auto', help='format for parsing output')",
                        "default='standard', help='format for parsing output')",
                    )
                ],
            ],
        )
    )

    # multi-edit: several places, judged on every file
    finder = "find_project_config_filepath"
    assert src.text(cli).count(finder) == 3, src.text(cli).count(finder)
    add(
        edit_task(
            src,
            "medit-rename-find_project_config",
            f"In yamllint/cli.py, rename the function {finder} to find_project_config, and update every call "
            "to it.",
            [
                (
                    Edit(cli, f"def {finder}(path='.'):", "def find_project_config(path='.'):"),
                    r"def[ \t]+find_project_config\(path=(['\"])\.\1\):",
                ),
                (
                    Edit(cli, f"return {finder}(path=", "return find_project_config(path="),
                    r"return find_project_config\(path=",
                ),
                (
                    Edit(
                        cli,
                        f"project_config_filepath = {finder}()",
                        "project_config_filepath = find_project_config()",
                    ),
                    r"project_config_filepath = find_project_config\(\)",
                ),
            ],
            wrong_edits=[
                [Edit(cli, f"def {finder}(path='.'):", "def find_project_config(path='.'):")],
                [
                    Edit(cli, f"def {finder}(path='.'):", "def find_project_config(path='.'):"),
                    Edit(
                        cli,
                        f"project_config_filepath = {finder}()",
                        "project_config_filepath = find_project_config()",
                    ),
                ],
            ],
            quick=True,
        )
    )
    add(
        edit_task(
            src,
            "medit-enable-two-rules",
            "In yamllint's default configuration (yamllint/conf/default.yaml), enable the float-values and "
            "octal-values rules.",
            [
                (
                    Edit(default, "\n  float-values: disable\n", "\n  float-values: enable\n"),
                    r"\n  float-values:[ \t]*enable[ \t]*\n",
                ),
                (
                    Edit(default, "\n  octal-values: disable\n", "\n  octal-values: enable\n"),
                    r"\n  octal-values:[ \t]*enable[ \t]*\n",
                ),
            ],
            wrong_edits=[
                [Edit(default, "\n  float-values: disable\n", "\n  float-values: enable\n")],
                [
                    Edit(relaxed, "\n  truthy: disable\n", "\n  truthy: disable\n  float-values: enable\n"),
                    Edit(
                        relaxed, "\n  comments: disable\n", "\n  comments: disable\n  octal-values: enable\n"
                    ),
                ],
            ],
        )
    )
    check_unique(tasks)
    return tasks
