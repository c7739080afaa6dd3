"""`gregor console`'s command line: wrong options and a missing web extra are one line each."""

from __future__ import annotations

import socket
import sys

from tests.cli.conftest import in_process, one_error_line


def test_a_missing_web_extra_is_one_line_naming_the_install(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "uvicorn", None)  # as if the package were not installed
    result = in_process(capsys, "console", "--bootstrap-server", "127.0.0.1:9")
    assert result.returncode == 1
    assert one_error_line(result) == ("gregor console: error: the web console needs the console extra: "
                                      "pip install 'gregor-streaming[console]' (missing: uvicorn)")


def test_wrong_options(capsys):
    assert "missing required option --bootstrap-server" in one_error_line(in_process(capsys, "console"))
    result = in_process(capsys, "console", "--bootstrap-server", "x:1", "--port", "70000")
    assert result.returncode == 2 and "--port must be 0..65535" in one_error_line(result)


def test_a_client_config_the_console_cannot_use_is_one_line(capsys, tmp_path):
    properties = tmp_path / "client.properties"
    properties.write_text("acks=all\n")
    result = in_process(capsys, "console", "--bootstrap-server", "127.0.0.1:9", "--port", "0",
                        "--command-config", str(properties))
    assert result.returncode == 2
    assert "invalid client config: 'acks' is a producer setting" in one_error_line(result)
    assert result.stdout == ""  # no banner for a console that does not start


def test_a_port_in_use_is_one_line(capsys):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = in_process(capsys, "console", "--bootstrap-server", "127.0.0.1:9", "--port", str(port))
    assert result.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}: Address already in use" in one_error_line(result)


def test_a_console_on_a_loopback_address_answers_only_to_loopback_names():
    from gregor.cli.console_serving import allowed_hosts as _allowed_hosts

    assert _allowed_hosts("127.0.0.1") == ("127.0.0.1", "localhost", "[::1]")
    assert _allowed_hosts("::1") == ("127.0.0.1", "localhost", "[::1]")
    assert _allowed_hosts("127.0.0.2")[-1] == "127.0.0.2"
    assert _allowed_hosts("0.0.0.0") == ("*",)
