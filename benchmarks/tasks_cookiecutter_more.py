"""cookiecutter 2.6.0's tasks of the later kinds (multi-hop, exact, file-count) and its edits.

``tasks_cookiecutter.py`` builds the workspace (the sdist and the notebook written here) and the tasks of
the kinds the benchmark began with, and asks this module for the rest. As there, every fact is read from
the files or asserted against them, so a wrong pin fails when the tasks are built.
"""

from __future__ import annotations

import re

from tasks_common import (
    Answer,
    Edit,
    Source,
    Task,
    Where,
    count_task,
    edit_task,
    name_term,
    regex_term,
    text_term,
)

_CLI, _CONFIG, _HOOKS = "cookiecutter/cli.py", "cookiecutter/config.py", "cookiecutter/hooks.py"
_EXCEPTIONS, _VCS = "cookiecutter/exceptions.py", "cookiecutter/vcs.py"
_VALID, _PARTIAL = "tests/test-config/valid-config.yaml", "tests/test-config/valid-partial-config.yaml"
_TEST_VCS, _TEST_CONFIG = "tests/vcs/test_identify_repo.py", "tests/test_get_config.py"


def build_tasks(src: Source, notebook: str) -> list[Task]:
    """The multi-hop, exact, file-count, edit and multi-edit tasks; ``notebook`` is the one written here."""
    return _answers(src, notebook) + _edits(src)


def _answers(src: Source, notebook: str) -> list[Task]:
    path = src.path
    tasks: list[Task] = []
    add = tasks.append

    # multi-hop: a fact that needs two files
    src.has(_CLI, "'--config-file', type=click.Path(), default=None,")
    src.has(_CONFIG, "USER_CONFIG_PATH = os.path.expanduser('~/.cookiecutterrc')")
    src.has(_CONFIG, "if config_file and config_file is not USER_CONFIG_PATH:")
    add(
        Task(
            "hop-default-user-config",
            "multi-hop",
            "When the cookiecutter command is given no --config-file and COOKIECUTTER_CONFIG is not set, "
            "which file does it read the user configuration from (when that file exists)?",
            Answer(
                [regex_term("~/.cookiecutterrc", r"\.cookiecutterrc(?![\w-])")],
                [
                    regex_term("~/.cookiecutter_replay", r"\.cookiecutter_replay"),
                    regex_term("~/.cookiecutters", r"\.cookiecutters(?![\w-])"),
                    text_term("cookiecutter.json"),
                ],
            ),
            right=("~/.cookiecutterrc", "USER_CONFIG_PATH, os.path.expanduser('~/.cookiecutterrc')"),
            wrong=("~/.cookiecutters/", "the template's cookiecutter.json"),
            quick=True,
        )
    )
    src.has(_HOOKS, "raise FailedHookException(")
    src.has(_EXCEPTIONS, "class FailedHookException(CookiecutterException):")
    add(
        Task(
            "hop-hook-exception-base",
            "multi-hop",
            "cookiecutter/hooks.py raises FailedHookException when a hook script fails. What is the base "
            "class of that exception?",
            Answer(
                [name_term("CookiecutterException")],
                [name_term("Exception"), name_term("RuntimeError"), name_term("OSError")],
            ),
            right=(
                "CookiecutterException",
                "class FailedHookException(CookiecutterException), in exceptions.py",
            ),
            wrong=("Exception", "RuntimeError"),
        )
    )
    add(
        Task(
            "hop-notebook-import",
            "multi-hop",
            f"{notebook} calls merge_configs. Which file of the project defines that function?",
            Answer(
                [path(_CONFIG)],
                [
                    path("cookiecutter/main.py"),
                    path("cookiecutter/utils.py"),
                    path("cookiecutter/generate.py"),
                ],
            ),
            right=(_CONFIG, "merge_configs is defined in cookiecutter/config.py"),
            wrong=("cookiecutter/utils.py", "cookiecutter/main.py"),
        )
    )

    # exact: a string quoted from the code, computed from it
    output_help = _group(r"'--output-dir',\n(?:.*\n)*?\s*help='([^']+)'", src.text(_CLI))
    add(
        Task(
            "exact-output-dir-help",
            "exact",
            "What is the help text of the -o/--output-dir option of the cookiecutter command? Quote it "
            "exactly.",
            Answer(
                [text_term(output_help)],
                [text_term("User configuration file"), text_term("Output directory")],
            ),
            right=(output_help, f"help='{output_help}'"),
            wrong=("User configuration file", "Output directory for the generated project."),
            quick=True,
        )
    )
    missing = src.has(_CONFIG, "f'Config file {config_path} does not exist.'")
    add(
        Task(
            "exact-missing-config-message",
            "exact",
            "What error message does cookiecutter give when it is asked to load a configuration file that is "
            "not there? Quote it.",
            Answer(
                [
                    regex_term(
                        "Config file ... does not exist", r"Config file\s.{0,120}?\bdoes not exist", flags=0
                    )
                ],
                [text_term("No such file or directory"), text_term("Unable to parse YAML file")],
            ),
            right=(missing, "Config file ~/my-config.yaml does not exist."),
            wrong=("No such file or directory", "Unable to parse YAML file {config_path}."),
        )
    )
    shebang = src.has(_HOOKS, "Hook script failed, might be an empty file or missing a shebang")
    add(
        Task(
            "exact-hook-shebang",
            "exact",
            "What message does cookiecutter give when a hook script cannot be run because it is empty or has "
            "no shebang line? Quote it.",
            Answer(
                [text_term(shebang)],
                [text_term("Hook script failed (exit status"), text_term("Pre-Prompt Hook script failed")],
            ),
            right=(shebang, f"FailedHookException('{shebang}')"),
            wrong=("Hook script failed (exit status: 1)", "Pre-Prompt Hook script failed"),
        )
    )

    # file-count: counted over a whole file by the grader
    add(
        count_task(
            "fcount-exceptions",
            "file-count",
            "How many exception classes does cookiecutter/exceptions.py define, the base class included?",
            src.count(_EXCEPTIONS, r"^class \w+\("),
            said="exception classes",
            quick=True,
        )
    )
    add(
        count_task(
            "fcount-hooks-functions",
            "file-count",
            "How many top-level functions does cookiecutter/hooks.py define?",
            src.count(_HOOKS, r"^def "),
            said="functions",
        )
    )
    add(
        count_task(
            "fcount-history-releases",
            "file-count",
            "How many releases does HISTORY.md describe (one `## ` heading each)?",
            src.count("HISTORY.md", r"^## \d"),
            said="releases",
        )
    )
    add(
        count_task(
            "fcount-get_config-tests",
            "file-count",
            f"How many test functions does {_TEST_CONFIG} define?",
            src.count(_TEST_CONFIG, r"^def test_"),
            said="test functions",
        )
    )
    return tasks


def _edits(src: Source) -> list[Task]:
    tasks: list[Task] = []
    add = tasks.append
    replay = "'replay_dir': os.path.expanduser('~/.cookiecutter_replay/'),"
    add(
        edit_task(
            src,
            "edit-replay-dir",
            "In cookiecutter/config.py, change the default replay directory to ~/.cookiecutter/replay/.",
            [
                (
                    Edit(_CONFIG, replay, "'replay_dir': os.path.expanduser('~/.cookiecutter/replay/'),"),
                    r"""'replay_dir': os\.path\.expanduser\((['"])~/\.cookiecutter/replay/?\1\),""",
                )
            ],
            wrong_edits=[
                [
                    Edit(
                        _CONFIG,
                        "'cookiecutters_dir': os.path.expanduser('~/.cookiecutters/'),",
                        "'cookiecutters_dir': os.path.expanduser('~/.cookiecutter/replay/'),",
                    )
                ],
                [
                    Edit(
                        _CONFIG, replay, "'replay_dir': os.path.expanduser('~/.cookiecutter_replay/replay/'),"
                    )
                ],
                [
                    Edit(
                        _VALID,
                        'replay_dir: "/home/example/some-path-to-replay-files"',
                        'replay_dir: "~/.cookiecutter/replay/"',
                    )
                ],
            ],
            quick=True,
        )
    )
    hooks = "'--accept-hooks',\n    type=click.Choice(['yes', 'ask', 'no']),\n    default='yes',"
    add(
        edit_task(
            src,
            "edit-accept-hooks-default",
            "Make the cookiecutter command's --accept-hooks option default to ask instead of yes.",
            [
                (
                    Edit(_CLI, hooks, hooks.replace("default='yes'", "default='ask'")),
                    re.escape(hooks.removesuffix("'yes',")) + r"""(['"])ask\1,""",
                )
            ],
            wrong_edits=[
                [Edit(_CLI, hooks, hooks.replace("default='yes'", "default='no'"))],
                [Edit(_CLI, hooks, hooks.replace("['yes', 'ask', 'no']", "['ask', 'yes', 'no']"))],
                [Edit("cookiecutter/main.py", "    accept_hooks=True,\n", "    accept_hooks='ask',\n")],
            ],
        )
    )
    email = '    email: "firstname.lastname@gmail.com"'
    add(
        edit_task(
            src,
            "edit-partial-config-email",
            f"In {_PARTIAL}, change the email to ada@example.com.",
            [
                (
                    Edit(_PARTIAL, email, '    email: "ada@example.com"'),
                    r"""    email:[ \t]*(["']?)ada@example\.com\1""",
                )
            ],
            wrong_edits=[
                [Edit(_VALID, email, '    email: "ada@example.com"')],
                [Edit(_PARTIAL, '    full_name: "Firstname Lastname"', '    full_name: "ada@example.com"')],
            ],
        )
    )

    # multi-edit: several places, judged on every file
    rename = [
        (_VCS, "def identify_repo(repo_url):"),
        (_VCS, "repo_type, repo_url = identify_repo(repo_url)"),
        (_TEST_VCS, "assert vcs.identify_repo(repo_url) =="),
        (_TEST_VCS, "        vcs.identify_repo(unknown_repo_type_url)"),
    ]
    renamed = [(f, old, old.replace("identify_repo", "detect_repo_type")) for f, old in rename]
    uses = [f for f in src.files if f.endswith(".py") and "identify_repo(" in src.text(f)]
    assert uses == [_VCS, _TEST_VCS], uses
    assert sum(src.text(f).count("identify_repo") for f in uses) == len(rename)
    add(
        edit_task(
            src,
            "medit-rename-identify_repo",
            "Rename the function identify_repo in cookiecutter/vcs.py to detect_repo_type, and update every "
            "place that uses it, the tests included.",
            [(Edit(f, old, new), re.escape(new)) for f, old, new in renamed],
            wrong_edits=[
                [Edit(f, old, new) for f, old, new in renamed[:2]],
                [Edit(f, old, old.replace("identify_repo", "detect_repo")) for f, old in rename],
            ],
            quick=True,
        )
    )
    dirs = [
        (
            'cookiecutters_dir: "/home/example/some-path-to-templates"',
            "cookiecutters_dir",
            "/srv/cookiecutters",
        ),
        ('replay_dir: "/home/example/some-path-to-replay-files"', "replay_dir", "/srv/replay"),
    ]
    add(
        edit_task(
            src,
            "medit-two-dirs",
            f"In {_VALID}, set cookiecutters_dir to /srv/cookiecutters and replay_dir to /srv/replay.",
            [
                (Edit(_VALID, old, f'{key}: "{value}"'), rf"""{key}:[ \t]*["']?{re.escape(value)}/?["']?""")
                for old, key, value in dirs
            ],
            wrong_edits=[
                [Edit(_VALID, dirs[0][0], 'cookiecutters_dir: "/srv/cookiecutters"')],
                [
                    Edit("tests/test-config/invalid-config-w-multiple-docs.yaml", old, f'{key}: "{value}"')
                    for old, key, value in dirs
                ],
            ],
        )
    )
    return tasks


def _group(pattern: str, text: str) -> str:
    """The first group of ``pattern``'s match in ``text`` (ValueError when it does not match)."""
    found = re.search(pattern, text)
    if not found:
        raise ValueError(f"nothing matches {pattern!r}")
    return found.group(1)


#: Where each answer stands, by task (the edits carry their own).
WHERE: dict[str, list[Where]] = {
    "hop-default-user-config": [
        Where(_CLI, "'--config-file', type=click.Path(), default=None,"),
        Where(_CONFIG, "USER_CONFIG_PATH = os.path.expanduser('~/.cookiecutterrc')"),
    ],
    "hop-hook-exception-base": [
        Where(_HOOKS, "raise FailedHookException("),
        Where(_EXCEPTIONS, "class FailedHookException(CookiecutterException):"),
    ],
    "hop-notebook-import": [
        Where("notebooks/team_config.ipynb", "from cookiecutter.config import get_config, merge_configs"),
        Where(_CONFIG, "def merge_configs("),
    ],
    "exact-output-dir-help": [Where(_CLI, "help='Where to output the generated project dir into'")],
    "exact-missing-config-message": [Where(_CONFIG, "f'Config file {config_path} does not exist.'")],
    "exact-hook-shebang": [Where(_HOOKS, "Hook script failed, might be an empty file or missing a shebang")],
    # The counts: every line holding one of the things counted (as the task counts them).
    "fcount-exceptions": [Where(_EXCEPTIONS, r"^class \w+\(", every=True, regex=True)],
    "fcount-hooks-functions": [Where(_HOOKS, r"^def ", every=True, regex=True)],
    "fcount-history-releases": [Where("HISTORY.md", r"^## \d", every=True, regex=True)],
    "fcount-get_config-tests": [Where(_TEST_CONFIG, r"^def test_", every=True, regex=True)],
}
