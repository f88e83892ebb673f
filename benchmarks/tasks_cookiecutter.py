"""A development code base: cookiecutter 2.6.0, an application with a YAML user configuration and a click
command line.

The workspace is the sdist of ``cookiecutter==2.6.0`` from PyPI (BSD-3), pinned by sha256 and unpacked at
run time, plus ``notebooks/team_config.ipynb`` (written here: it loads one of the package's test
configurations with ``cookiecutter/config.py`` and keeps its outputs). Its shape: a click command (``main``
in ``cookiecutter/cli.py``) whose options reach a user configuration in YAML (``~/.cookiecutterrc``, or the
file ``COOKIECUTTER_CONFIG`` names) merged over ``DEFAULT_CONFIG`` by ``cookiecutter/config.py``; every
exception in one module (``exceptions.py``) and raised in others; template hooks run by ``hooks.py``; YAML
test configurations under ``tests/test-config/``; a 1,106-line changelog (``HISTORY.md``) and tests. Its
modules are short (the longest 427 lines): the deep reads are in the changelog.

**Development**: added after litecli, while yamllint (``tasks_yamllint.py``) was held out. This module
builds the workspace and the tasks of the first nine kinds but edits; ``tasks_cookiecutter_more.py`` holds
the rest (multi-hop, exact, file-count, the edits).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import tasks_cookiecutter_more
from tasks_common import (
    Answer,
    Cells,
    Sdist,
    Source,
    Task,
    Term,
    Where,
    check_unique,
    count_task,
    line_task,
    located,
    name_term,
    number_term,
    regex_term,
    text_term,
    write_notebook,
)

PIN = Sdist("cookiecutter", "2.6.0", "db21f8169ea4f4fdc2408d48ca44859349de2647fbe494a9d6c3edfc0542c21c")
NOTEBOOK = "notebooks/team_config.ipynb"

#: The notebook's cells; the outputs are what running them against cookiecutter 2.6.0 gives (with PyYAML;
#: tests/test_bench_codebases.py runs them to check).
NOTEBOOK_CELLS: Cells = (
    (
        "markdown",
        "# Our team's cookiecutter config\n\nDoes the shared config we hand out load, and what does our "
        "template expand to?",
        None,
    ),
    (
        "code",
        "from cookiecutter.config import get_config, merge_configs\n"
        "from cookiecutter.exceptions import CookiecutterException\n"
        "\n"
        'TEAM_CONFIG = "tests/test-config/valid-config.yaml"  # what we copy to ~/.cookiecutterrc\n'
        'TEMPLATE = "gh:audreyfeldroy/cookiecutter-pypackage"\n'
        "config = get_config(TEAM_CONFIG)",
        None,
    ),
    ("code", 'sorted(config["abbreviations"])', "['bb', 'gh', 'gl', 'helloworld']"),
    (
        "code",
        'prefix, _, rest = TEMPLATE.partition(":")\nconfig["abbreviations"][prefix].format(rest)',
        "'https://github.com/audreyfeldroy/cookiecutter-pypackage.git'",
    ),
    ("markdown", "## Configs people sent us\n\nWhich ones does cookiecutter refuse?", None),
    (
        "code",
        "checked = {}\n"
        "for name in (\n"
        '    "empty-config.yaml",\n'
        '    "invalid-config.yaml",\n'
        '    "valid-partial-config.yaml",\n'
        '    "invalid-config-w-array.yaml",\n'
        '    "invalid-config-w-multiple-docs.yaml",\n'
        "):\n"
        "    try:\n"
        '        get_config("tests/test-config/" + name)\n'
        '        checked[name] = "loads"\n'
        "    except CookiecutterException as error:\n"
        "        checked[name] = type(error).__name__\n"
        "checked",
        "{'empty-config.yaml': 'loads', 'invalid-config.yaml': 'InvalidConfiguration', "
        "'valid-partial-config.yaml': 'loads', 'invalid-config-w-array.yaml': 'InvalidConfiguration', "
        "'invalid-config-w-multiple-docs.yaml': 'InvalidConfiguration'}",
    ),
    (
        "code",
        'mine = merge_configs(config["default_context"], {"full_name": "Ada Lovelace", '
        '"project": {"tags": ["math"]}})\n'
        'mine["full_name"], mine["project"]',
        "('Ada Lovelace', {'description': 'description', 'tags': ['math']})",
    ),
)


def build_workspace(root: Path) -> Path:
    """The workspace at ``root``: the cached sdist unpacked, and the notebook."""
    PIN.unpack(PIN.cached(), root)
    write_notebook(root, NOTEBOOK, NOTEBOOK_CELLS)
    return root


def version_term(version: str) -> Term:
    """A release or version number, not inside a longer one (2.4 is not in 2.4.1 or 12.4); a release's
    last ``.0`` may be left out (1.3 is 1.3.0)."""
    parts = version.split(".")
    spelled = re.escape(version)
    if len(parts) > 2 and parts[-1] == "0":
        spelled = re.escape(".".join(parts[:-1])) + r"(?:\.0)?"
    return regex_term(version, rf"(?<![\w.]){spelled}(?!\.?\d)")


def build_tasks(root: Path) -> list[Task]:
    """Every task, made from the workspace at ``root`` (facts read from its files and checked there)."""
    src = Source(root)
    tasks = _first_kinds(src) + tasks_cookiecutter_more.build_tasks(src, NOTEBOOK)
    check_unique(tasks)
    return located(tasks, {**WHERE, **tasks_cookiecutter_more.WHERE})


def _first_kinds(src: Source) -> list[Task]:
    """The tasks of the kinds the benchmark began with, but the edits."""
    path = src.path
    cli, config, hooks, exceptions = _CLI, _CONFIG, "cookiecutter/hooks.py", "cookiecutter/exceptions.py"
    main, generate, prompt = "cookiecutter/main.py", "cookiecutter/generate.py", _PROMPT
    environment, utils = "cookiecutter/environment.py", "cookiecutter/utils.py"
    tasks: list[Task] = []
    add = tasks.append

    # locate
    add(
        Task(
            "locate-StrictEnvironment",
            "locate",
            "Which file of this project defines the class StrictEnvironment?",
            Answer([path(environment)], [path(utils), path(generate), path("cookiecutter/extensions.py")]),
            right=(environment, "StrictEnvironment is defined in `environment.py`."),
            wrong=("cookiecutter/utils.py", "cookiecutter/extensions.py"),
            quick=True,
        )
    )
    add(
        Task(
            "locate-FailedHookException",
            "locate",
            "Which module defines the exception FailedHookException?",
            Answer([path(exceptions)], [path(hooks), path(cli), path(generate)]),
            right=(exceptions, "In the exceptions module (cookiecutter.exceptions); hooks.py raises it."),
            wrong=("cookiecutter/hooks.py", "tests/test_exceptions.py"),
        )
    )
    add(
        Task(
            "locate-expand_abbreviations",
            "locate",
            "Which file defines the function expand_abbreviations?",
            Answer(
                [path(_REPOSITORY)],
                [
                    path(config),
                    path(main),
                    path("tests/repository/test_abbreviation_expansion.py", bare=True),
                ],
            ),
            right=(_REPOSITORY, "expand_abbreviations lives in repository.py."),
            wrong=("cookiecutter/config.py", "tests/repository/test_abbreviation_expansion.py"),
        )
    )

    # value
    src.has(config, "'replay_dir': os.path.expanduser('~/.cookiecutter_replay/'),")
    add(
        Task(
            "value-replay-dir",
            "value",
            "Where does cookiecutter save replay files by default (its default replay_dir)?",
            Answer(
                [regex_term("~/.cookiecutter_replay", r"\.cookiecutter_replay(?![\w-])")],
                [
                    regex_term("~/.cookiecutters", r"\.cookiecutters(?![\w-])"),
                    regex_term("~/.cookiecutterrc", r"\.cookiecutterrc(?![\w-])"),
                ],
            ),
            right=("~/.cookiecutter_replay/", "'replay_dir': os.path.expanduser('~/.cookiecutter_replay/')"),
            wrong=("~/.cookiecutters/", "In ~/.cookiecutterrc."),
            quick=True,
        )
    )
    src.has(cli, "'--accept-hooks',\n    type=click.Choice(['yes', 'ask', 'no']),\n    default='yes',")
    add(
        Task(
            "value-accept-hooks",
            "value",
            "What is the default value of the --accept-hooks option of the cookiecutter command?",
            Answer(
                [name_term("yes", case=False)],
                [name_term("ask", case=False), regex_term("no", r"(?<![\w-])['\"`]?no['\"`]?(?![\w-])")],
            ),
            right=("yes", "default='yes' (hooks run without asking; the choices are yes, ask and no)"),
            wrong=("ask", "'no'"),
        )
    )
    pyyaml = _group(r"'pyyaml>=([\d.]+)',", src.text("setup.py"))
    add(
        Task(
            "value-pyyaml",
            "value",
            "Which minimum PyYAML version does cookiecutter require in its setup.py?",
            Answer([version_term(pyyaml)], [version_term("5.1"), version_term("6.0"), version_term("3.7")]),
            right=(pyyaml, f"'pyyaml>={pyyaml}'"),
            wrong=("5.1", "PyYAML 6.0 or newer"),
        )
    )
    src.has(config, "'gh': 'https://github.com/{0}.git',")
    add(
        Task(
            "value-gh-abbreviation",
            "value",
            "What URL does cookiecutter's built-in gh abbreviation expand to?",
            Answer(
                [regex_term("https://github.com/{0}.git", r"github\.com/(?:\{0\}|\S+)\.git")],
                [regex_term("gitlab.com", r"gitlab\.com"), regex_term("bitbucket.org", r"bitbucket\.org")],
            ),
            right=("https://github.com/{0}.git", "'gh': 'https://github.com/{0}.git' (gh:user/repo)"),
            wrong=("https://gitlab.com/{0}.git", "https://github.com/{0}"),
        )
    )

    # line (computed)
    add(
        line_task(
            src,
            "line-get_user_config",
            config,
            "def get_user_config(",
            what="get_user_config",
            other=src.line_of(config, "def get_config("),
            quick=True,
        )
    )
    add(
        line_task(
            src,
            "line-run_hook",
            hooks,
            "def run_hook(",
            what="run_hook",
            other=src.line_of(hooks, "def run_script("),
        )
    )
    add(
        line_task(
            src,
            "line-InvalidConfiguration",
            exceptions,
            "class InvalidConfiguration(",
            what="the exception InvalidConfiguration",
            other=src.line_of(exceptions, "class ConfigDoesNotExistException("),
        )
    )

    # count (part of a file)
    add(
        count_task(
            "count-cli-options",
            "count",
            "How many options (@click.option decorators) does the main command in cookiecutter/cli.py "
            "declare?",
            src.count(cli, r"^@click\.option\("),
            said="options",
            quick=True,
        )
    )
    block = _group(r"default_extensions = \[\n(.*?)\n\s*\]", src.text(environment), re.DOTALL)
    extensions = re.findall(r"^\s+'cookiecutter\.extensions\.\w+',$", block, re.MULTILINE)
    assert len(extensions) == len(block.splitlines()), block
    add(
        count_task(
            "count-default-extensions",
            "count",
            "How many Jinja extensions does cookiecutter load by default (the default_extensions list in "
            "cookiecutter/environment.py)?",
            len(extensions),
            said="extensions",
        )
    )

    # cross-file
    importers = [
        f for f in _python(src, "cookiecutter/") if re.search(r"import .*\bget_user_config\b", src.text(f))
    ]
    assert importers == [cli, main], importers
    add(
        Task(
            "cross-get_user_config-importers",
            "cross-file",
            "Which modules of the cookiecutter package (not its tests) import get_user_config? Name every "
            "one.",
            Answer(
                [path(cli), path(main)],
                [path(_REPOSITORY), path(generate), path("cookiecutter/replay.py")],
            ),
            right=("cookiecutter/cli.py and cookiecutter/main.py", "cli.py and cookiecutter/main.py"),
            wrong=("cookiecutter/main.py", "cli.py, cookiecutter/main.py and replay.py"),
        )
    )
    src.has(main, "from cookiecutter.generate import generate_context, generate_files\n")
    add(
        Task(
            "cross-main-generate-imports",
            "cross-file",
            "Which names does cookiecutter/main.py import from cookiecutter.generate?",
            Answer(
                [name_term("generate_context"), name_term("generate_files")],
                [
                    name_term("generate_file"),
                    name_term("apply_overwrites_to_context"),
                    name_term("render_and_create_dir"),
                ],
            ),
            right=("generate_context, generate_files", "It imports `generate_files` and `generate_context`."),
            wrong=("generate_files", "generate_context, generate_file and generate_files"),
            quick=True,
        )
    )
    testers = [f for f in _python(src, "tests/") if "merge_configs" in src.text(f)]
    assert testers == ["tests/test_get_config.py"], testers
    add(
        Task(
            "cross-tests-merge_configs",
            "cross-file",
            "Which test file has the tests for merge_configs?",
            Answer(
                [path("tests/test_get_config.py", bare=True)],
                [path(config), path("tests/test_get_user_config.py", bare=True)],
            ),
            right=("tests/test_get_config.py", "test_get_config.py (test_merge_configs)"),
            wrong=("cookiecutter/config.py", "tests/test_get_user_config.py"),
        )
    )

    # grep-read
    src.has(config, "raise ConfigDoesNotExistException(")
    src.has(config, "env_config_file = os.environ['COOKIECUTTER_CONFIG']")
    src.has(config, "return get_config(env_config_file)")
    add(
        Task(
            "grep-missing-config",
            "grep-read",
            "If the COOKIECUTTER_CONFIG environment variable names a file that does not exist, which "
            "exception does cookiecutter raise?",
            Answer(
                [name_term("ConfigDoesNotExistException")],
                [name_term("InvalidConfiguration"), name_term("FileNotFoundError"), name_term("OSError")],
            ),
            right=("ConfigDoesNotExistException", "get_config raises ConfigDoesNotExistException."),
            wrong=("InvalidConfiguration", "FileNotFoundError"),
        )
    )
    src.has(cli, "password=os.environ.get('COOKIECUTTER_REPO_PASSWORD'),")
    add(
        Task(
            "grep-repo-password",
            "grep-read",
            "Which environment variable does the cookiecutter command read a repository's password from?",
            Answer(
                [name_term("COOKIECUTTER_REPO_PASSWORD")],
                [name_term("COOKIECUTTER_CONFIG"), name_term("COOKIECUTTER_PASSWORD")],
            ),
            right=("COOKIECUTTER_REPO_PASSWORD", "os.environ.get('COOKIECUTTER_REPO_PASSWORD')"),
            wrong=("COOKIECUTTER_PASSWORD", "COOKIECUTTER_CONFIG"),
        )
    )
    yes = ast.literal_eval(_group(r"\n    yes_choices = (\[.*?\])\n", src.text(prompt)))
    add(
        Task(
            "grep-yes-choices",
            "grep-read",
            "Which replies does cookiecutter accept as yes at a yes/no prompt? Name every one.",
            Answer(
                # Not inside a word, nor the t of "don't".
                [regex_term(y, rf"(?<![\w-])(?<!\w'){re.escape(y)}(?![\w-])") for y in yes],
                [name_term("ok", case=False), name_term("off", case=False)],
            ),
            right=(", ".join(yes), f"yes_choices = {yes}"),
            wrong=("yes, y, true, 1", "1, true, t, yes, y, on, ok"),
        )
    )

    # notebook (the notebook written here)
    add(
        Task(
            "nb-team-config",
            "notebook",
            f"Which configuration file does {NOTEBOOK} load as the team's config?",
            Answer(
                [path(_VALID, bare=True)],
                [
                    path("tests/test-config/valid-partial-config.yaml", bare=True),
                    text_term(".cookiecutterrc"),
                ],
            ),
            right=(_VALID, 'TEAM_CONFIG = "tests/test-config/valid-config.yaml"'),
            wrong=("tests/test-config/valid-partial-config.yaml", "~/.cookiecutterrc"),
            quick=True,
        )
    )
    url = ast.literal_eval(str(NOTEBOOK_CELLS[3][2]))
    add(
        Task(
            "nb-template-url",
            "notebook",
            "In the team config notebook, which URL does the team's template expand to, as its output shows?",
            Answer(
                [text_term(url.removeprefix("https://"))],
                [
                    regex_term(url.removesuffix(".git"), re.escape(url.removesuffix(".git")) + r"(?![.\w-])"),
                    text_term("gitlab.com"),
                ],
            ),
            right=(url, f"gh:audreyfeldroy/cookiecutter-pypackage expands to '{url}'"),
            wrong=(url.removesuffix(".git"), "https://gitlab.com/audreyfeldroy/cookiecutter-pypackage.git"),
        )
    )
    checked = ast.literal_eval(str(NOTEBOOK_CELLS[5][2]))
    refused = sum(1 for outcome in checked.values() if outcome != "loads")
    add(
        Task(
            "nb-refused-configs",
            "notebook",
            "How many of the configuration files the team config notebook checks does cookiecutter refuse "
            "to load?",
            Answer(
                [number_term(refused)],
                [number_term(refused - 1), number_term(refused + 1), number_term(len(checked))],
            ),
            right=(
                str(refused),
                "Three: invalid-config.yaml, invalid-config-w-array.yaml and the multi-document one.",
            ),
            wrong=(str(refused - 1), f"{len(checked)} files"),
        )
    )

    # big-file: deep in the 1,106-line changelog, and at the ends of the two longest modules
    history = src.text("HISTORY.md").splitlines()
    added = next(n for n, line in enumerate(history) if "`--config-file` and `--default-config`" in line)
    heads = [(n, line) for n, line in enumerate(history) if line.startswith("## ")]
    at = max(k for k, (n, _) in enumerate(heads) if n < added)
    release, before, after = (_group(r"^## ([\d.]+) ", heads[k][1]) for k in (at, at - 1, at + 1))
    add(
        Task(
            "big-history-config-file",
            "big-file",
            "According to HISTORY.md, in which release did cookiecutter add the --config-file and "
            "--default-config options?",
            Answer(
                [version_term(release)], [version_term(before), version_term(after), version_term("2.0.1")]
            ),
            right=(release, f"In {heads[at][1].removeprefix('## ')}."),
            wrong=(before, after),
            quick=True,
            where=(Where("HISTORY.md", heads[at][1]), Where("HISTORY.md", history[added])),
        )
    )
    src.has(prompt, 'raise ValueError("Illegal template path")')
    add(
        Task(
            "big-nested-template-error",
            "big-file",
            "In cookiecutter/prompt.py, which exception does choose_nested_template raise when the chosen "
            "template path is empty or absolute?",
            Answer(
                [name_term("ValueError")],
                [
                    name_term("UndefinedVariableInTemplate"),
                    name_term("TypeError"),
                    name_term("RepositoryNotFound"),
                ],
            ),
            right=("ValueError", 'raise ValueError("Illegal template path")'),
            wrong=("TypeError", "UndefinedVariableInTemplate"),
        )
    )
    tail = src.text(generate).rsplit("run_hook_from_repo_dir(", 1)[1]
    assert "'post_gen_project'," in tail.split("return project_dir", 1)[0], tail
    add(
        Task(
            "big-generate-last-hook",
            "big-file",
            "In cookiecutter/generate.py, which hook does generate_files run after it has written the "
            "project's files?",
            Answer([name_term("post_gen_project")], [name_term("pre_gen_project"), name_term("pre_prompt")]),
            right=("post_gen_project", "It runs the post_gen_project hook (pre_gen_project ran before)."),
            wrong=("pre_gen_project", "pre_prompt"),
        )
    )
    return tasks


def _python(src: Source, folder: str) -> list[str]:
    """The Python files under ``folder`` (the tests hold binary and non-UTF-8 files too)."""
    return [f for f in src.files if f.startswith(folder) and f.endswith(".py")]


def _group(pattern: str, text: str, flags: int = 0) -> str:
    """The first group of ``pattern``'s match in ``text`` (ValueError when it does not match)."""
    found = re.search(pattern, text, flags)
    if not found:
        raise ValueError(f"nothing matches {pattern!r}")
    return found.group(1)


_CLI, _CONFIG, _PROMPT = "cookiecutter/cli.py", "cookiecutter/config.py", "cookiecutter/prompt.py"
_REPOSITORY, _VALID = "cookiecutter/repository.py", "tests/test-config/valid-config.yaml"
#: Where each answer stands (the lines it rests on, the notebook as its cell view), by task; line tasks and
#: big-history-config-file carry their own. Every task has one.
WHERE: dict[str, list[Where]] = {
    "locate-StrictEnvironment": [Where("cookiecutter/environment.py", "class StrictEnvironment(")],
    "locate-FailedHookException": [Where("cookiecutter/exceptions.py", "class FailedHookException(")],
    "locate-expand_abbreviations": [Where(_REPOSITORY, "def expand_abbreviations(")],
    "value-replay-dir": [Where(_CONFIG, "'replay_dir': os.path.expanduser(")],
    "value-accept-hooks": [Where(_CLI, "'--accept-hooks',", until="default='yes',")],
    "value-pyyaml": [Where("setup.py", "'pyyaml>=")],
    "value-gh-abbreviation": [Where(_CONFIG, "'gh': 'https://github.com/{0}.git',")],
    "count-cli-options": [Where(_CLI, r"^@click\.option\(", every=True, regex=True)],
    "count-default-extensions": [Where("cookiecutter/environment.py", "default_extensions = [", until="]")],
    "cross-get_user_config-importers": [
        Where(_CLI, "from cookiecutter.config import get_user_config"),
        Where("cookiecutter/main.py", "from cookiecutter.config import get_user_config"),
    ],
    "cross-main-generate-imports": [Where("cookiecutter/main.py", "from cookiecutter.generate import")],
    "cross-tests-merge_configs": [Where("tests/test_get_config.py", "def test_merge_configs(")],
    "grep-missing-config": [
        Where(_CONFIG, "env_config_file = os.environ['COOKIECUTTER_CONFIG']"),
        Where(_CONFIG, "return get_config(env_config_file)"),
        Where(_CONFIG, "raise ConfigDoesNotExistException("),
    ],
    "grep-repo-password": [Where(_CLI, "COOKIECUTTER_REPO_PASSWORD")],
    "grep-yes-choices": [Where(_PROMPT, "    yes_choices = [")],
    "nb-team-config": [Where(NOTEBOOK, f'TEAM_CONFIG = "{_VALID}"')],
    "nb-template-url": [
        Where(NOTEBOOK, "# out: 'https://github.com/audreyfeldroy/cookiecutter-pypackage.git'")
    ],
    "nb-refused-configs": [Where(NOTEBOOK, "# out: {'empty-config.yaml': 'loads'")],
    "big-nested-template-error": [Where(_PROMPT, 'raise ValueError("Illegal template path")')],
    # The last run_hook_from_repo_dir call of generate_files: the hook it names.
    "big-generate-last-hook": [Where("cookiecutter/generate.py", "'post_gen_project',")],
}
