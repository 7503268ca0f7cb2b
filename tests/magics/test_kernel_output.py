"""Issue 36 in a real ipykernel (jupyter_client), whose terminals live in the
terminal host as a notebook's do: colours reach the HTML of every shown line
(and never the text), ``%bash_list`` says who started each running job in one
column, and a long command is kept whole, shown as its first line and "…"."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator

import pytest

from tests.host.conftest import new_dir, stop_everything
from tests.magics.kernel_support import Kernel

pytestmark = pytest.mark.kernel

SESSION = "nb-output"
REG = "get_ipython()._dsh_magics_state.magics.registry"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    host_dir = new_dir()
    k = Kernel(
        env={"DSH_MAGICS_HOST": "1", "DSH_MAGICS_HOST_DIR": host_dir}, cwd=str(tmp_path_factory.mktemp("kernel-cwd"))
    )
    try:
        k.run(f"%load_ext dsh_magics\n%config BashMagics.default_session = {SESSION!r}")
        yield k
    finally:
        k.run(f"for _t in {REG}.list():\n    {REG}.close(_t.session_id)", ok=False)
        k.shutdown()
        stop_everything(host_dir)
        shutil.rmtree(host_dir, ignore_errors=True)


@pytest.fixture(autouse=True)
def _terminals_idle_after_each_test(kernel: Kernel) -> Iterator[None]:
    yield
    kernel.run(
        f"for _t in {REG}.list():\n"
        "    if _t.job_id:\n"
        f"        {REG}.interrupt(_t.session_id)\n"
        f"        {REG}.job(_t.job_id).wait(30)\n"
    )


def _json(kernel: Kernel, expr: str) -> object:
    return json.loads(kernel.value(f"__import__('json').dumps({expr})"))


def _result_data(kernel: Kernel, code: str) -> dict[str, str]:
    ex = kernel.run(code, timeout=90)
    results = ex.of_type("execute_result")
    assert results, ex.text()
    return results[-1]["content"]["data"]  # type: ignore[no-any-return]


def test_the_kernel_uses_the_terminal_host(kernel: Kernel) -> None:
    """What the tests below go through: the host's wire, as in a notebook."""
    assert kernel.value(f"type({REG}).__name__") == "HostClient"


def test_every_shown_line_keeps_its_colour_through_the_host(kernel: Kernel) -> None:
    """36 §Output, finding 10: 16, 256 and true colour, bold and underline on
    all 40 shown lines (the screen has 30 rows), escaped; text/plain plain."""
    data = _result_data(
        kernel,
        "%bash_exec --timeout 30 for i in $(seq 1 50); do "
        r"printf '\e[31m<r%d>\e[0m \e[38;5;208mo\e[0m \e[38;2;1;2;3mt\e[0m \e[1mb\e[0m \e[4mu\e[0m\n' $i; done",
    )
    pre = re.search(r'<pre style="margin:0[^>]*>(.*?)</pre>', data["text/html"], re.S)
    assert pre, data["text/html"]
    rows = pre.group(1).split("\n")
    assert len(rows) == 40
    for i, row in zip(range(11, 51), rows, strict=True):
        assert row == (
            f'<span style="color:#cd0000">&lt;r{i}&gt;</span> <span style="color:#ff8700">o</span> '
            '<span style="color:#010203">t</span> <span style="font-weight:bold">b</span> '
            '<span style="text-decoration:underline">u</span>'
        ), row
    assert "\x1b" not in data["text/plain"] and "<r50> o t b u" in data["text/plain"]
    assert _json(kernel, "'styles' in _.to_dict()") is False


def test_bash_list_shows_who_started_each_job_in_one_column(kernel: Kernel) -> None:
    kernel.run("%bash_exec sleep 60")
    kernel.run(
        "from dsh_magics import tools as _tools\n"
        f"_tools.call('bash_exec', {{'command': 'sleep 60'}}, caller_session='{SESSION}-agent-with-a-long-name', "
        f"registry={REG})"
    )
    data = _result_data(kernel, "%bash_list")
    rows = {
        who: line
        for line in data["text/plain"].splitlines()
        for who in ("notebook", "agent")
        if f"[{SESSION}]" in line and who == "notebook" or f"[{SESSION}-agent" in line and who == "agent"
    }
    assert set(rows) == {"notebook", "agent"}, data["text/plain"]
    assert rows["notebook"].index(" notebook ") == rows["agent"].index(" agent ")
    assert rows["notebook"].index(" pid ") == rows["agent"].index(" pid ")
    html = data["text/html"]
    assert '<th style="text-align:left">source</th>' in html
    assert "notebook</code>" in html and "agent</code>" in html
    kernel.run(f"%bash_interrupt --session {SESSION}-agent-with-a-long-name")
    kernel.run(f"%bash_close --session {SESSION}-agent-with-a-long-name")


def test_a_long_command_is_kept_whole_and_shown_by_its_first_line(kernel: Kernel) -> None:
    """Deliver 3: jobs kept ``command[:200]`` as their label, so listings
    through the host, the panel and orphaned results showed a cut command."""
    body = "echo start\n# " + "x" * 3000 + "\necho end\n"
    kernel.run("%%bash_exec --wait\n" + body)
    got = _json(
        kernel,
        f"[{REG}.latest_job({SESSION!r}).label, [j.label for j in {REG}.jobs.all() if j.owner == {SESSION!r}][-1]]",
    )
    assert got == [body, body]
    data = _result_data(kernel, f"{REG}.result({REG}.latest_job({SESSION!r}).id)")
    assert "$ echo start …</code>" in data["text/html"]
    assert "x" * 3000 in data["text/html"]  # the whole command is the header's tooltip
