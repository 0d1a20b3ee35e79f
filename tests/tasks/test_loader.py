"""Loading Harbor tasks: every key of the reference, unknown keys, wrong types, canaries."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fire_exp.errors import InputError
from fire_exp.paths import SUITES_DIR
from fire_exp.tasks.loader import discover, load_task, load_tasks, strip_canary

DATA = Path(__file__).parent / "data"


@pytest.fixture
def word_count(tmp_path: Path) -> Path:
    """A writable copy of the Terminal-Bench 2 shaped task."""
    return Path(shutil.copytree(DATA / "word-count", tmp_path / "word-count"))


def test_terminal_bench_2_task_reads_every_section(word_count: Path) -> None:
    task = load_task(word_count)
    assert task.name == "word-count" and task.schema_version == "1.1"
    assert task.metadata["difficulty"] == "easy" and task.metadata["tags"] == ["text", "wc"]
    assert task.agent.timeout_sec == 120.0 and task.verifier.timeout_sec == 60.0
    assert task.verifier.env == {"EXPECTED_WORDS": "9"}
    env = task.environment
    assert (env.cpus, env.memory_mb, env.storage_mb, env.gpus) == (1.0, 1024, 10240, 0)
    assert env.network_mode == "no-network"  # allow_internet = false
    assert env.docker_image is None and env.workdir == "/app"
    assert env.env == {"CORPUS": "/app/corpus.txt"}
    assert "canary" not in task.instruction and task.instruction.startswith("Count the words")


def test_prebuilt_image_task_needs_no_environment_folder() -> None:
    task = load_task(DATA / "prebuilt-greeting")
    assert task.environment.docker_image == "fire-exp/base:bookworm"
    assert not task.environment_dir.exists()
    assert task.environment.network_mode == "public"
    assert task.instruction == "Create `/app/greeting.txt` containing exactly the line " \
        "`hello, harbor`.\n"


def test_bundled_suite_loads_with_stable_digests() -> None:
    tasks = load_tasks(SUITES_DIR / "fire-mini")
    assert len(tasks) >= 6
    assert [t.digest for t in tasks] == [t.digest for t in load_tasks(SUITES_DIR / "fire-mini")]


def test_digest_changes_with_any_file(word_count: Path) -> None:
    before = load_task(word_count).digest
    (word_count / "tests" / "test_outputs.py").write_text("assert False\n")
    assert load_task(word_count).digest != before


def test_unknown_keys_are_tolerated(word_count: Path) -> None:
    toml = word_count / "task.toml"
    toml.write_text(toml.read_text() + '\n[future_section]\nsetting = 1\n'
                    '[agent.future]\nkey = "x"\n')
    assert load_task(word_count).name == "word-count"


def test_older_memory_and_storage_strings(word_count: Path) -> None:
    toml = word_count / "task.toml"
    toml.write_text(toml.read_text().replace("memory_mb = 1024", 'memory = "2G"')
                    .replace("storage_mb = 10240", 'storage = "512M"'))
    env = load_task(word_count).environment
    assert (env.memory_mb, env.storage_mb) == (2048, 512)


@pytest.mark.parametrize(("old", "new", "field"), [
    ("timeout_sec = 120.0", 'timeout_sec = "fast"', "agent.timeout_sec"),
    ("timeout_sec = 120.0", "timeout_sec = 0", "agent.timeout_sec"),
    ("cpus = 1", "cpus = true", "environment.cpus"),
    ("memory_mb = 1024", 'memory_mb = "lots"', "environment.memory_mb"),
    ("allow_internet = false", 'network_mode = "lan"', "environment.network_mode"),
    ("allow_internet = false", 'allow_internet = "no"', "environment.allow_internet"),
    ('EXPECTED_WORDS = "9"', "EXPECTED_WORDS = [9]", "verifier.env.EXPECTED_WORDS"),
    ("gpus = 0", "gpus = 0.5", "environment.gpus"),
    ('name = "fire-exp-tests/word-count"', "name = 7", "task.name"),
    ("mcp_servers = []", 'mcp_servers = []\nworkdir = "app"', "environment.workdir"),
    ('schema_version = "1.1"', 'schema_version = ["1.1"]', "schema_version"),
    ("[agent]", "[agent\n", "<toml>"),
    # numbers that pass a type check but no machine can grant
    ("cpus = 1", "cpus = inf", "environment.cpus"),
    ("cpus = 1", "cpus = nan", "environment.cpus"),
    ("timeout_sec = 120.0", "timeout_sec = inf", "agent.timeout_sec"),
    ("timeout_sec = 60.0", "timeout_sec = 1e9", "verifier.timeout_sec"),
    ("memory_mb = 1024", "memory_mb = inf", "environment.memory_mb"),
    ("memory_mb = 1024", 'memory = "99999999T"', "environment.memory"),
    ("build_timeout_sec = 300.0", "build_timeout_sec = -inf", "environment.build_timeout_sec"),
    ("gpus = 0", "gpus = " + "9" * 5000, "<toml>"),
    ("gpus = 0", "gpus = -1", "environment.gpus"),
    ("gpus = 0", "gpus = 100000", "environment.gpus"),
    ('name = "fire-exp-tests/word-count"', 'name = "fire-exp-tests/.."', "task.name"),
    ('name = "fire-exp-tests/word-count"', 'name = "fire-exp-tests/"', "task.name"),
])
def test_wrong_values_name_the_file_and_field(word_count: Path, old: str, new: str,
                                              field: str) -> None:
    toml = word_count / "task.toml"
    assert old in toml.read_text()
    toml.write_text(toml.read_text().replace(old, new, 1))
    with pytest.raises(InputError) as err:
        load_task(word_count)
    assert err.value.field == field
    assert str(toml) in str(err.value)


@pytest.mark.parametrize(("remove", "field"), [
    ("task.toml", "task.toml"),
    ("instruction.md", "instruction.md"),
    ("tests/test.sh", "tests/test.sh"),
    ("environment/Dockerfile", "environment/Dockerfile"),
])
def test_missing_files_are_named(word_count: Path, remove: str, field: str) -> None:
    (word_count / remove).unlink()
    with pytest.raises(InputError) as err:
        load_task(word_count)
    assert err.value.field == field and str(word_count) in str(err.value)


def test_an_instruction_of_only_a_canary_is_empty(word_count: Path) -> None:
    (word_count / "instruction.md").write_text("<!-- terminal-bench-canary GUID 1 -->\n")
    with pytest.raises(InputError, match="empty instruction"):
        load_task(word_count)


@pytest.mark.parametrize(("text", "expected"), [
    ("<!-- BENCHMARK DATA SHOULD NEVER APPEAR. canary GUID 1 -->\n\nDo it.\n", "Do it.\n"),
    ("# BENCHMARK DATA SHOULD NEVER APPEAR\n# terminal-bench-canary GUID 2\n\n# Title\nDo.\n",
     "# Title\nDo.\n"),
    ("<!--\nBENCHMARK DATA SHOULD NEVER APPEAR\ncanary GUID 3\n-->\nDo it.\n", "Do it.\n"),
    ("<!-- a note, not a canary marker? no: it says canary -->\nDo.\n", "Do.\n"),
    ("<!--\na plain comment\n-->\nDo it.\n", "<!--\na plain comment\n-->\nDo it.\n"),
    ("Do it.\n<!-- canary later stays -->\n", "Do it.\n<!-- canary later stays -->\n"),
])
def test_strip_canary(text: str, expected: str) -> None:
    assert strip_canary(text) == expected


def test_discover_finds_tasks_and_broken_task_folders(tmp_path: Path) -> None:
    shutil.copytree(DATA / "word-count", tmp_path / "a")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "instruction.md").write_text("half a task\n")
    (tmp_path / "notes").mkdir()
    assert [p.name for p in discover(tmp_path)] == ["a", "b"]
    with pytest.raises(InputError, match="no task directories"):
        discover(tmp_path / "notes")


def test_an_instruction_that_is_not_utf8_names_its_line(word_count: Path) -> None:
    path = word_count / "instruction.md"
    path.write_bytes(path.read_bytes() + b"caf\xe9\n")
    with pytest.raises(InputError) as err:
        load_task(word_count)
    assert err.value.path == str(path) and err.value.field.startswith("line ")
    assert "not UTF-8" in err.value.problem


def test_a_task_toml_that_is_not_utf8_is_one_error(word_count: Path) -> None:
    toml = word_count / "task.toml"
    toml.write_bytes(toml.read_bytes().replace(b'"easy"', b'"\xff"'))
    with pytest.raises(InputError, match="not UTF-8") as err:
        load_task(word_count)
    assert err.value.path == str(toml)
