"""Memmap folders exchanged between Python tensordict and tdrl, checked from the Python side.

Run by tests/tensordict/memmap_python_interop_test.cpp with the interpreter the build was
configured with (TDRL_PYTHON: the PyPI lane's .venv-torch, which scripts/common.sh pins):

    tensordict_interop.py write DIR   # saves each case with TensorDict.memmap into DIR/<case>,
                                      # and what it saved into DIR/expected.json
    tensordict_interop.py check DIR   # loads each case of DIR/expected.json (written by tdrl)
                                      # from DIR/<case> with TensorDict.load_memmap and compares

Both sides describe a TensorDict the same way (describe below; `describe` in the C++ test), so
expected.json is written by one side and checked by the other:

    TensorDict      {"kind": "TensorDict", "batch_size": [...], "device": "cpu" | null (top level
                     only), "entries": {key: description, ...}}
    lazy stack      {"kind": "LazyStackedTensorDict", "stack_dim": d, "members": [description]}
    tensor          {"kind": "tensor", "dtype": "torch.float32", "shape": [...], "values": [...]}
                    (row-major; a complex element is [real, imag])
    non-tensor      {"kind": "NonTensorData", "value": v}
                    {"kind": "NonTensorStack", "batch_size": [...], "values": [...]} (row-major)

Values must be equal, of the same JSON type (an int64 value stays an int, a double a float).
"""

import json
import sys
from pathlib import Path

import tensordict
import torch
from tensordict import (
    LazyStackedTensorDict,
    NonTensorData,
    NonTensorStack,
    TensorDict,
)


def _flat(nested, ndim):
    """The row-major values of `ndim` levels of nested lists."""
    if ndim == 0:
        return [nested]
    out = []
    for item in nested:
        out.extend(_flat(item, ndim - 1))
    return out


def describe_tensor(t):
    t = t.detach().cpu().contiguous()
    if t.is_complex():
        values = torch.view_as_real(t.to(torch.complex128)).reshape(-1, 2).tolist()
    elif t.dtype in (torch.float16, torch.bfloat16):
        # tolist() of these gives the same floats as float64 does; explicit for the reader
        values = t.to(torch.float64).reshape(-1).tolist()
    else:
        values = t.reshape(-1).tolist()
    return {
        "kind": "tensor",
        "dtype": str(t.dtype),
        "shape": list(t.shape),
        "values": values,
    }


def describe(value, top=False):
    if isinstance(value, NonTensorStack):
        return {
            "kind": "NonTensorStack",
            "batch_size": list(value.batch_size),
            "values": _flat(value.tolist(), value.batch_dims),
        }
    if isinstance(value, NonTensorData):
        return {"kind": "NonTensorData", "value": value.data}
    if isinstance(value, LazyStackedTensorDict):
        return {
            "kind": "LazyStackedTensorDict",
            "stack_dim": value.stack_dim,
            "members": [describe(m) for m in value.tensordicts],
        }
    if isinstance(value, TensorDict):
        out = {"kind": "TensorDict", "batch_size": list(value.batch_size)}
        if top:
            out["device"] = None if value.device is None else str(value.device)
        out["entries"] = {
            key: describe(value._get_str(key, None)) for key in value.keys()
        }
        return out
    if isinstance(value, torch.Tensor):
        return describe_tensor(value)
    raise TypeError(f"cannot describe a {type(value).__name__}")


def diff(got, want, path, out):
    """Appends to `out` where `got` differs from `want`, naming the path."""
    if isinstance(want, dict) and isinstance(got, dict):
        if set(got) != set(want):
            out.append(
                f"{path}: keys {sorted(got)} but expected {sorted(want)}"
            )
        for key in want:
            if key in got:
                diff(got[key], want[key], f"{path}/{key}", out)
        return
    if isinstance(want, list) and isinstance(got, list):
        if len(got) != len(want):
            out.append(f"{path}: {len(got)} items but expected {len(want)}")
            return
        for i, (g, w) in enumerate(zip(got, want)):
            diff(g, w, f"{path}[{i}]", out)
        return
    if type(got) is not type(want) or got != want:
        out.append(
            f"{path}: {got!r} ({type(got).__name__}) but expected {want!r} "
            f"({type(want).__name__})"
        )


def cases():
    """What Python saves for tdrl to load: the layout's corners."""
    torch.manual_seed(0)
    flat = TensorDict(
        {
            "obs": torch.arange(12, dtype=torch.float32).reshape(3, 4) / 8,
            "act": torch.tensor([1, -2, 3]),
            "flag": torch.tensor([True, False, True]),
        },
        batch_size=[3],
    )
    dtypes = TensorDict(
        {
            "f16": (torch.arange(6, dtype=torch.float32).reshape(2, 3) / 4).half(),
            "bf16": (torch.arange(12, dtype=torch.float32).reshape(2, 3, 2) - 5.5).bfloat16(),
            "u8": torch.arange(250, 256, dtype=torch.uint8).reshape(2, 3),
            "i8": torch.tensor([[-128, 0, 127], [1, 2, 3]], dtype=torch.int8),
            "i16": torch.tensor([[-32768, 0, 32767], [4, 5, 6]], dtype=torch.int16),
            "i32": torch.tensor([[-(2**31), 0, 2**31 - 1], [7, 8, 9]], dtype=torch.int32),
            "i64": torch.tensor([[-(2**40), 0, 2**40], [1, 2, 3]], dtype=torch.int64),
            "f64": torch.tensor([[0.1, -2.5, 1e300], [3.0, 4.0, 5.0]], dtype=torch.float64),
            "b": torch.tensor([[True, False, True], [False, False, True]]),
            "c64": torch.tensor([[1 + 2j, -3j, 0.5], [1, 2, 3j]], dtype=torch.complex64),
            "c128": torch.tensor([[0.1j, -1, 2], [3, 4 - 4j, 5]], dtype=torch.complex128),
        },
        batch_size=[2, 3],
    )
    odd_keys = TensorDict(
        {
            "a b": torch.zeros(2),
            "x/y": torch.ones(2, 2, dtype=torch.float16),
            "\u00fcn\u00efc\u00f8de": torch.tensor([1.5, 2.5], dtype=torch.bfloat16),
            "dot.key": torch.arange(2, dtype=torch.uint8),
            "pct%20": torch.arange(2, dtype=torch.int32),
            ".": torch.tensor([3.0, 4.0]),
            "..": torch.tensor([5.0, 6.0]),
            'c:d<e>"f|g?h*i\\j': torch.tensor([7, 8]),
            "tab\tkey": torch.tensor([True, True]),
            "sub dir/x": TensorDict(
                {"in ner": torch.arange(4.0).reshape(2, 2)}, batch_size=[2]
            ),
        },
        batch_size=[2],
    )
    nested = TensorDict(
        {
            "observation": torch.randn(4, 5),
            "next": TensorDict(
                {
                    "reward": torch.randn(4, 1, dtype=torch.float64),
                    "done": torch.zeros(4, 1, dtype=torch.bool),
                    "deeper": TensorDict(
                        {"z": torch.arange(8).reshape(4, 2)}, batch_size=[4, 2]
                    ),
                },
                batch_size=[4],
            ),
            "action": torch.randn(4, 2),
        },
        batch_size=[4],
    )
    empty_batch = TensorDict(
        {"scalar": torch.tensor(7), "vec": torch.arange(5.0)}, batch_size=[]
    )
    zero_sized = TensorDict(
        {"rows": torch.zeros(0, 3), "none": torch.zeros(0, 2, 0, dtype=torch.int32)},
        batch_size=[0],
    )
    no_elements = TensorDict(
        {"empty": torch.zeros(2, 0), "full": torch.ones(2)}, batch_size=[2]
    )
    members = [
        TensorDict(
            {
                "a": torch.full((2,), float(i)),
                "b": torch.arange(2 * (i + 1)).reshape(2, i + 1),
            },
            batch_size=[2],
        )
        for i in range(3)
    ]
    lazy_stack = LazyStackedTensorDict(*members, stack_dim=1)
    nested_lazy = TensorDict(
        {
            "x": torch.arange(2.0),
            "members": LazyStackedTensorDict(
                TensorDict({"y": torch.zeros(3)}, []),
                TensorDict({"y": torch.ones(4)}, []),
                stack_dim=0,
            ),
        },
        batch_size=[2],
    )
    non_tensor = TensorDict({"x": torch.zeros(2, 2)}, batch_size=[2, 2])
    non_tensor["env"] = NonTensorData("CartPole-v1", batch_size=[2, 2])
    non_tensor["steps"] = NonTensorData(7, batch_size=[2, 2])
    non_tensor["gamma"] = NonTensorData(0.99, batch_size=[2, 2])
    non_tensor["done"] = NonTensorData(True, batch_size=[2, 2])
    non_tensor["tags"] = NonTensorStack(
        NonTensorStack("a", "b"), NonTensorStack("c", "d b")
    )
    non_tensor["cfg"] = TensorDict({"lr": NonTensorData(0.5, batch_size=[2, 2])}, [2, 2])
    names = TensorDict({"a": torch.arange(6).reshape(2, 3)}, batch_size=[2, 3], names=["t", "b"])
    format_keys = TensorDict(
        {"_class": torch.zeros(2), "_format_version": torch.ones(2), "stack_dim": torch.ones(2)},
        batch_size=[2],
    )
    return {
        "flat": flat,
        "dtypes": dtypes,
        "odd_keys": odd_keys,
        "nested": nested,
        "empty_batch": empty_batch,
        "zero_sized": zero_sized,
        "no_elements": no_elements,
        "lazy_stack": lazy_stack,
        "nested_lazy": nested_lazy,
        "non_tensor": non_tensor,
        "names": names,
        "format_keys": format_keys,
    }


def write(folder):
    folder.mkdir(parents=True, exist_ok=True)
    expected = {}
    for name, td in cases().items():
        # What memmap returns is what the folder holds (device cpu, as Python records).
        expected[name] = describe(td.memmap(folder / name), top=True)
    (folder / "expected.json").write_text(json.dumps({"cases": expected}, indent=1))
    print(f"wrote {len(expected)} cases with tensordict {tensordict.__version__}")
    return 0


def check(folder):
    want = json.loads((folder / "expected.json").read_text())["cases"]
    problems = []
    for name, expected in want.items():
        try:
            loaded = TensorDict.load_memmap(folder / name)
        except Exception as e:  # noqa: BLE001 - reported with the case's name
            problems.append(f"{name}: load_memmap raised {type(e).__name__}: {e}")
            continue
        diff(describe(loaded, top=True), expected, name, problems)
    for line in problems:
        print(line)
    print(
        f"checked {len(want)} cases with tensordict {tensordict.__version__}: "
        f"{len(problems)} differences"
    )
    return 1 if problems else 0


def main(argv):
    if len(argv) != 3 or argv[1] not in ("write", "check"):
        print(f"usage: {argv[0]} write|check DIR", file=sys.stderr)
        return 2
    folder = Path(argv[2])
    return write(folder) if argv[1] == "write" else check(folder)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
