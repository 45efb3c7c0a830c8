"""The whole trace of a run as arrays on disk: .npz or .safetensors, plus a JSON sidecar.

Array names follow the trace (README "The trace"), one per tensor, batch first:

    src.ids, tgt.ids                                  (B, Ts), (B, Tt) token ids, [PAD]-filled
    encoder.embeddings.{tokens,positional,summed}    (B, T, d_model); positional is (T, d_model)
    encoder.{i}.self_attn.{q,k,v}                     (B, H, T, d_k)
    encoder.{i}.self_attn.{scores,scaled,masked,weights,context}
                                                      (B, H, Tq, Tk) / context (B, H, Tq, d_k)
    encoder.{i}.self_attn.allowed                     (B, H, Tq, Tk) bool, True = may attend
    encoder.{i}.output, encoder.output                (B, T, d_model)
    decoder.* likewise, with decoder.{i}.cross_attn.* (queries from the decoder, keys from the encoder)
    logits                                            (B, Tt, tgt_vocab)

The sidecar names the tokens of every row, the spec and the model config, and each array's
shape and dtype. Loading never unpickles: np.load(allow_pickle=False) or safetensors.numpy.
"""

from __future__ import annotations

import dataclasses
import io
import json
import os
import re
from pathlib import Path

import numpy as np
import torch

TRACE_FORMATS = ("npz", "safetensors")
FORMAT_ID = "attention-lab-trace"
VERSION = 1
_DERIVED = ("scores", "scaled", "masked", "weights", "context")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # a spec file's "\\ud800" without its pair: in a sentence, a token


def _np(t: torch.Tensor) -> np.ndarray:
    return np.ascontiguousarray(t.detach().to("cpu").numpy())


def _record_arrays(prefix: str, rec, derived: bool) -> dict[str, np.ndarray]:
    rec = rec.materialise()  # q, k, v once (a lean trace's record projects them on each access)
    out = {f"{prefix}.{name}": _np(getattr(rec, name)) for name in ("q", "k", "v")}
    if derived:  # what the forward pass computed from q, k, v, mask (eq. 1)
        steps = rec.steps()
        out.update((f"{prefix}.{name}", _np(steps[name])) for name in _DERIVED)
    out[f"{prefix}.allowed"] = _np(rec.allowed)
    return out


def trace_arrays(run, *, derived: bool = True) -> dict[str, np.ndarray]:
    """Every tensor of run.trace (and the batch's token ids) by name, as CPU numpy arrays.

    derived=False leaves out the (B, H, Tq, Tk) scores/scaled/masked/weights and the context
    (recomputable from q, k, v and allowed), which dominate the size for long inputs.
    """
    trace = run.trace
    arrays: dict[str, np.ndarray] = {"src.ids": _np(run.src), "tgt.ids": _np(run.tgt)}
    for side in ("encoder", "decoder"):
        stack = getattr(trace, side)
        if stack is None:
            continue
        emb = stack.embeddings
        for name in ("tokens", "positional", "summed"):
            arrays[f"{side}.embeddings.{name}"] = _np(getattr(emb, name))
        for i, layer in enumerate(stack.layers):
            arrays.update(_record_arrays(f"{side}.{i}.self_attn", layer.self_attn, derived))
            if hasattr(layer, "cross_attn"):
                arrays.update(_record_arrays(f"{side}.{i}.cross_attn", layer.cross_attn, derived))
            arrays[f"{side}.{i}.output"] = _np(layer.output)
        if stack.output is not None:
            arrays[f"{side}.output"] = _np(stack.output)
    if trace.logits is not None:
        arrays["logits"] = _np(trace.logits)
    return arrays


def attention_map_bytes(run, *, derived: bool = True) -> int:
    """Bytes of the (B, H, Tq, Tk) arrays trace_arrays would hold, from the shapes alone (nothing is
    computed): per block the mask `allowed` (bool) and, if derived, scores, scaled, masked and weights.
    A lower bound of the whole trace, and nearly all of it at long inputs (they grow as T^2)."""
    trace = run.trace
    (B, Ts), Tt = run.src.shape, run.tgt.size(1)
    total = 0
    for stack, T in ((trace.encoder, Ts), (trace.decoder, Tt)):
        if stack is None:
            continue
        item = stack.layers[0].output.element_size() if stack.layers else 4
        per_cell = 1 + (4 * item if derived else 0)  # allowed, then the four derived maps
        for layer in stack.layers:
            total += B * layer.self_attn.n_heads * T * T * per_cell
            if hasattr(layer, "cross_attn"):
                total += B * layer.cross_attn.n_heads * Tt * Ts * per_cell
    return total


def trace_metadata(run, spec=None, config=None, arrays: dict[str, np.ndarray] | None = None) -> dict:
    """The sidecar: tokens of every batch row, the spec, the model config and the array index."""
    rows = []
    for i, s in enumerate(run.sentences):
        rows.append({
            "row": i,
            "sentence": s.key,
            "text": s.text,
            "src_tokens": run.src_pieces(i),  # with the [PAD]s the batch added
            "src_ids": [int(x) for x in run.src[i].tolist()],
            "tgt_tokens": run.tgt_pieces(i),
            "tgt_ids": [int(x) for x in run.tgt[i].tolist()],
            "translation": s.translation,
            "cut_from": s.cut_from,
        })
    meta = {
        "format": FORMAT_ID,
        "version": VERSION,
        "mask_convention": "boolean, True = may attend; masked scores are -inf, their weights exactly 0",
        "rows": rows,
        "notices": list(run.notices),
        "spec": spec.to_dict() if spec is not None else None,
        "config": _config_dict(config),
    }
    if arrays is not None:
        meta["arrays"] = {name: {"shape": list(a.shape), "dtype": str(a.dtype)} for name, a in arrays.items()}
    return meta


def _config_dict(config) -> dict | None:
    if config is None:
        return None
    if dataclasses.is_dataclass(config):
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in dataclasses.asdict(config).items()}
    return dict(config)


def trace_files(run, spec=None, *, fmt: str = "npz", config=None, stem: str = "trace",
                derived: bool = True) -> dict[str, bytes]:
    """{file name: bytes} of the data file and its sidecar (nothing touches the disk)."""
    if fmt not in TRACE_FORMATS:
        raise ValueError(f"format: {fmt!r} is not one of {list(TRACE_FORMATS)}")
    arrays = trace_arrays(run, derived=derived)
    meta = trace_metadata(run, spec, config, arrays)
    data_name = f"{stem}.{fmt}"
    meta["data_file"] = data_name
    sidecar = _LONE_SURROGATE.sub(lambda m: json.dumps(m.group()).strip('"'),  # "\\ud800": no UTF-8 holds one as itself
                                  json.dumps(meta, ensure_ascii=False, indent=2, allow_nan=False)) + "\n"
    if fmt == "npz":
        buf = io.BytesIO()
        np.savez_compressed(buf, **arrays)
        data = buf.getvalue()
    else:
        from safetensors.numpy import save

        # the sidecar rides along inside the file too, so a lone .safetensors is self-describing
        data = save(arrays, metadata={FORMAT_ID: sidecar})
    return {data_name: data, f"{stem}.json": sidecar.encode("utf-8")}


def save_trace(run, spec, path: str | os.PathLike, format: str = "npz", *, config=None,  # noqa: A002
               derived: bool = True) -> tuple[Path, Path]:
    """Write `path` with the format's suffix (.npz/.safetensors) and its .json sidecar, atomically."""
    from viz.export import write_atomic

    path = Path(path)
    stem = path.stem if path.suffix in (".npz", ".safetensors", ".json") else path.name
    files = trace_files(run, spec, fmt=format, config=config, stem=stem, derived=derived)
    data_name, json_name = list(files)
    data_path = write_atomic(path.parent / data_name, files[data_name])
    json_path = write_atomic(path.parent / json_name, files[json_name])
    return data_path, json_path


class TraceFileError(ValueError):
    """A file that is not a readable trace, or its sidecar that is not one: the message names the file and says what
    is wrong, in one line (never numpy's advice to unpickle it)."""


def _unreadable(path: Path, exc: BaseException) -> TraceFileError:
    why = " ".join(str(exc).split()) or type(exc).__name__
    if why.startswith("Object arrays"):  # numpy's, with advice to unpickle: an .npz of Python objects
        why = "it holds an array of Python objects, which no trace does: not read"
    elif "pickle" in why.lower():  # numpy's word for "neither .npz nor .npy", with advice to run what the file holds
        why = "neither an .npz archive nor a .npy array"
    elif "context manager" in why:  # np.load gave one array: an .npy file
        why = "one .npy array, not an .npz archive of a trace's arrays"
    return TraceFileError(f"{path.name}: not a readable Attention Lab trace ({why[:300]})")


_JSON_KINDS = {list: "list", str: "string", int: "number", float: "number", bool: "true or false", type(None): "null"}


def _sidecar(text: str, name: str) -> dict:
    """A sidecar's JSON text, read: a TraceFileError naming `name` where it is not JSON, or not an object."""
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as exc:
        raise TraceFileError(f"{name}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if not isinstance(meta, dict):
        raise TraceFileError(f"{name}: not a trace's sidecar (a JSON {_JSON_KINDS.get(type(meta), 'value')}, "
                             "not an object)")
    return meta


def _read_sidecar(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise TraceFileError(f"{path.name}: not a trace's sidecar (not UTF-8 text)") from None
    return _sidecar(text, path.name)


def load_trace(path: str | os.PathLike) -> tuple[dict[str, np.ndarray], dict]:
    """(arrays, sidecar) from a data file, its sidecar, or their common stem. Never unpickles.

    A file that is not a trace (cut short, another file so named) raises TraceFileError, naming it."""
    data_path = _data_file(Path(path))
    return _read_arrays(data_path), _sidecar_of(data_path)


def _data_file(path: Path) -> Path:
    """The data file `path` names: itself (.npz, .safetensors), else the one the sidecar beside it names, else the
    stem's .npz or .safetensors."""
    if path.suffix in (".npz", ".safetensors"):
        candidates = [path]
    else:
        base = path.with_suffix("") if path.suffix == ".json" else path
        meta_path, candidates = base.parent / (base.name + ".json"), []
        if meta_path.is_file():
            data_file = _read_sidecar(meta_path).get("data_file")
            if isinstance(data_file, str) and data_file and Path(data_file).name == data_file:  # beside it, only
                candidates.append(meta_path.parent / data_file)
        candidates += [base.parent / (base.name + ".npz"), base.parent / (base.name + ".safetensors")]
    data_path = next((p for p in candidates if p.is_file()), None)
    if data_path is None:
        raise FileNotFoundError(f"no trace data file for {path} (looked for .npz and .safetensors)")
    return data_path


def _read_arrays(data_path: Path) -> dict[str, np.ndarray]:
    try:
        if data_path.suffix == ".npz":
            with np.load(data_path, allow_pickle=False) as npz:  # a lone .npy array has no `with`: TypeError
                return {name: npz[name] for name in npz.files}
        from safetensors.numpy import load_file

        return load_file(str(data_path))
    except OSError:  # a file that cannot be opened at all (permissions): as the system says it
        raise
    except Exception as exc:  # noqa: BLE001 - a zip cut short, a bad header, a CRC: one line naming the file
        raise _unreadable(data_path, exc) from None


def _sidecar_of(data_path: Path) -> dict:
    """The sidecar beside the data file; a .safetensors without one (or with an empty one) carries its own."""
    meta_path = data_path.with_suffix(".json")
    meta = _read_sidecar(meta_path) if meta_path.is_file() else {}
    if meta or data_path.suffix != ".safetensors":
        return meta
    from safetensors import safe_open

    with safe_open(str(data_path), framework="numpy") as f:
        embedded = (f.metadata() or {}).get(FORMAT_ID)
    return _sidecar(embedded, f"{data_path.name}'s sidecar") if embedded else {}
