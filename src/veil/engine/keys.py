"""Per-job noise key: every bucket's noise is a function of (secret key, bucket id).

Why: a bucket that is computed twice (its worker died after writing, a run was resumed)
used to get fresh noise, and anyone who saw both versions could average them. Here the noise
of bucket ``b`` comes from ``Philox(SeedSequence(HMAC-SHA256(key, b)))``: a recomputed bucket
is bit-identical, so a resume never publishes a second draw.

Why this key is not a "seed" in the experiments-only sense: a seed (``--seed``) is a small
number chosen by a person, reused, written in the manifest and easy to guess, and whoever knows
it can subtract the noise. The job key is 256 bits from the operating system's entropy
(:func:`secrets.token_bytes`), made for one job only, never printed or published, stored in the
job's private work folder (mode 0700) in a file of mode 0600 created with ``O_EXCL``, and
destroyed when the job completes. Workers never receive it: the parent sends each bucket only
its derived 256-bit value. Like raw rows, the key must not leave the custodian: with the key,
the published output minus the recomputed noise gives the exact counts. The HMAC makes the
buckets' streams independent (a pseudorandom function of the bucket id); numpy's generators
are statistically strong but not cryptographic, the same assumption as veil's default
generator (see ``docs/guarantees.md``).

Examples
--------
>>> k = seed_key(7)                      # experiments only: a key derived from a seed
>>> a = bucket_rng(bucket_entropy(k, 3)).integers(0, 100, 3)
>>> b = bucket_rng(bucket_entropy(k, 3)).integers(0, 100, 3)
>>> bool((a == b).all())
True
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

import numpy as np

from ..errors import DataError
from .fsutil import write_file

__all__ = ["KEY_FILE", "create_key", "load_key", "seed_key", "bucket_entropy", "bucket_rng"]

KEY_FILE = "key"
KEY_BYTES = 32


def create_key(work: Path) -> bytes:
    """Make a new 256-bit key in ``work/key`` (mode 0600); an existing key is an error."""
    path = Path(work) / KEY_FILE
    if os.path.lexists(path):
        raise DataError("a noise key already exists for this job; refusing to replace it "
                        "(a new key would redraw the noise)", path=str(path))
    key = secrets.token_bytes(KEY_BYTES)
    write_file(path, key, mode=0o600)
    return key


def load_key(work: Path) -> bytes:
    """Read the job's key, checking it is a private regular file of the right size."""
    path = Path(work) / KEY_FILE
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        raise DataError("the job's noise key is missing from its private work folder: the "
                        "buckets cannot be recomputed without a second, averageable noise "
                        "draw, so the run cannot be resumed; discard it (veil batch discard) "
                        "and start a new job", path=str(path)) from None
    if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077 \
            or st.st_size != KEY_BYTES:
        raise DataError("the job's noise key is not a private 32-byte file owned by you "
                        "(mode 0600): it may have been tampered with; the run cannot be resumed",
                        path=str(path))
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        return fh.read()


def seed_key(seed: int) -> bytes:
    """The key of a seeded run (**experiments only**: anyone who knows the seed has the key)."""
    return hashlib.sha256(b"veil-engine-seed\x00" + str(int(seed)).encode()).digest()


def bucket_entropy(key: bytes, bucket: int) -> int:
    """The 256-bit value bucket ``bucket`` draws its noise from: HMAC-SHA256(key, bucket)."""
    mac = hmac.new(key, b"veil-engine-bucket\x00" + int(bucket).to_bytes(8, "big"),
                   hashlib.sha256)
    return int.from_bytes(mac.digest(), "big")


def bucket_rng(entropy: int) -> np.random.Generator:
    """The generator a bucket's task receives: Philox keyed through a SeedSequence."""
    return np.random.Generator(np.random.Philox(np.random.SeedSequence(entropy)))
