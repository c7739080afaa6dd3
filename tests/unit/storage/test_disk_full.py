"""gregor.storage.disk_full, the test-only full disk: the allowance of its control file, only under
the directory it names, re-read when the file changes, gone with the file."""

from __future__ import annotations

import errno

import pytest

from gregor.storage.disk_full import DiskAllowance, room


def test_writes_under_the_named_directory_get_the_allowance_then_enospc(tmp_path):
    control = tmp_path / "control"
    full = tmp_path / "full"
    allowance = DiskAllowance(str(control))
    assert allowance.room(str(full / "t-0" / "0.log"), 500) == 500  # no control file: no limit
    control.write_text(f"{full}\n300\n")
    assert allowance.room(str(full / "t-0" / "0.log"), 200) == 200
    assert allowance.room(str(full / "t-1" / "0.log"), 200) == 100
    with pytest.raises(OSError) as refused:
        allowance.room(str(full / "t-0" / "0.log"), 1)
    assert refused.value.errno == errno.ENOSPC
    assert allowance.room(str(tmp_path / "fuller" / "t-0" / "0.log"), 200) == 200  # another directory
    control.write_text(f"{full}\n")  # rewritten: a new allowance, none
    with pytest.raises(OSError):
        allowance.room(str(full / "t-0" / "0.log"), 1)
    control.unlink()
    assert allowance.room(str(full / "t-0" / "0.log"), 200) == 200


def test_without_the_environment_variable_nothing_is_limited(tmp_path):
    assert room(str(tmp_path / "t-0" / "0.log"), 1 << 20) == 1 << 20
