#!/usr/bin/env python3
"""Writes the .npy fixtures of test/npy.test.ts with Debian's NumPy (python3-numpy).

Run: /usr/bin/python3 scripts/make-npy-fixtures.py   (or `pnpm run fixtures`)

Every array is arange-based, so the test recomputes the expected values itself:
  <dtype>.npy     np.arange(12).reshape(3, 4) as that dtype (bool: arange % 3 == 0; f2: arange / 4)
  v2.npy, v3.npy  the float32 array written with format versions 2.0 and 3.0
  scalar.npy      np.float64(2.5), shape ()
  empty.npy       np.zeros((0, 3), float32)
  fortran.npy     the float32 array in Fortran order (must be rejected)
  big-endian.npy  the float32 array as '>f4' (must be rejected)
  unsigned16.npy  the array as '<u2' (unsupported type, must be rejected)
"""
import os

import numpy as np
from numpy.lib import format as npy_format

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test", "fixtures", "npy")
os.makedirs(HERE, exist_ok=True)

base = np.arange(12).reshape(3, 4)
arrays = {
    "float16": (base / 4).astype("<f2"),
    "float32": base.astype("<f4"),
    "float64": base.astype("<f8"),
    "int8": (base - 6).astype("i1"),
    "int16": (base * -300).astype("<i2"),
    "int32": (base * 100000).astype("<i4"),
    "int64": (base * 10**12).astype("<i8"),
    "uint8": (base * 20).astype("u1"),
    "bool": base % 3 == 0,
}


def write(name, array, version=None):
    with open(os.path.join(HERE, name), "wb") as file:
        npy_format.write_array(file, array, version=version)


for name, array in arrays.items():
    write(f"{name}.npy", array, version=(1, 0))
write("v2.npy", arrays["float32"], version=(2, 0))
write("v3.npy", arrays["float32"], version=(3, 0))
write("scalar.npy", np.array(2.5, dtype="<f8"), version=(1, 0))
write("empty.npy", np.zeros((0, 3), dtype="<f4"), version=(1, 0))
write("fortran.npy", np.asfortranarray(arrays["float32"]), version=(1, 0))
write("big-endian.npy", arrays["float32"].astype(">f4"), version=(1, 0))
write("unsigned16.npy", base.astype("<u2"), version=(1, 0))
print(f"wrote {len(os.listdir(HERE))} files to {os.path.normpath(HERE)}")
