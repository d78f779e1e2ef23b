"""A query worker that cannot open a network connection (Linux seccomp, no dependency).

Refusing ``SERVICE`` on the parsed query is the decision; this is the floor under it.
When no SERVICE endpoint is allow-listed, a worker installs a seccomp filter on itself
before it loads any data: from then on ``socket()`` fails with EPERM for every address
family but ``AF_UNIX`` (the pipe to the server is already open), and ``io_uring`` is
unavailable. Whatever the engine parses — whatever a parser other than the engine's
missed — it cannot reach the network: not a loopback listener, not a metadata service,
not DNS. The filter is permanent for the process (``no_new_privs``), and inherited by
anything it might start.

Only x86-64 and AArch64 Linux are covered; elsewhere :func:`deny_network` returns
False and the refusal on the parsed query stands alone (``/healthz`` says which).
"""

from __future__ import annotations

import ctypes
import os
import platform
import socket
import struct
from typing import Final

# audit arch, socket(2) number, io_uring_setup/enter/register
_ARCH: Final = {
    "x86_64": (0xC000003E, 41, (425, 426, 427)),
    "amd64": (0xC000003E, 41, (425, 426, 427)),
    "aarch64": (0xC00000B7, 198, (425, 426, 427)),
    "arm64": (0xC00000B7, 198, (425, 426, 427)),
}
_LD_W_ABS: Final = 0x20
_JEQ_K: Final = 0x15
_JGE_K: Final = 0x35
_RET_K: Final = 0x06
_ALLOW: Final = 0x7FFF0000
_EPERM: Final = 0x00050000 | 1
_X32_BIT: Final = 0x40000000
_PR_SET_NO_NEW_PRIVS: Final = 38
_PR_SET_SECCOMP: Final = 22
_SECCOMP_MODE_FILTER: Final = 2


class _Fprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def _program(arch: int, nr_socket: int, uring: tuple[int, ...]) -> list[bytes]:
    out: list[bytes] = []

    def op(code: int, jt: int, jf: int, k: int) -> None:
        out.append(struct.pack("HBBI", code, jt, jf, k))

    op(_LD_W_ABS, 0, 0, 4)                 # seccomp_data.arch
    op(_JEQ_K, 1, 0, arch)
    op(_RET_K, 0, 0, _EPERM)               # any other ABI (int 0x80, ...): nothing at all
    op(_LD_W_ABS, 0, 0, 0)                 # seccomp_data.nr
    op(_JGE_K, 0, 1, _X32_BIT)
    op(_RET_K, 0, 0, _EPERM)               # the x32 ABI
    for nr in uring:
        op(_JEQ_K, 0, 1, nr)
        op(_RET_K, 0, 0, _EPERM)
    op(_JEQ_K, 1, 0, nr_socket)
    op(_RET_K, 0, 0, _ALLOW)
    op(_LD_W_ABS, 0, 0, 16)                # args[0], low word: the address family
    op(_JEQ_K, 0, 1, socket.AF_UNIX)
    op(_RET_K, 0, 0, _ALLOW)
    op(_RET_K, 0, 0, _EPERM)
    return out


def deny_network() -> bool:
    """Forbid this process every socket but AF_UNIX; whether the filter is in place."""
    if os.uname().sysname != "Linux" or struct.calcsize("P") != 8:
        return False
    spec = _ARCH.get(platform.machine().lower())
    if spec is None:
        return False
    code = b"".join(_program(*spec))
    buf = ctypes.create_string_buffer(code, len(code))
    prog = _Fprog(len(code) // 8, ctypes.addressof(buf))
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return False
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong,
                      ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    if prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    if prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(prog), 0, 0) != 0:
        return False
    try:  # prove it: the filter is only trusted once it refuses
        socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    except OSError:
        return True
    return False


__all__ = ["deny_network"]
