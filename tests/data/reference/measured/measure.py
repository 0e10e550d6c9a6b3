"""Real PyTorch memory on one GPU, for comparing with gpusize's transformers engine and train model.

Models are built from their config.json with random weights (nothing downloaded), in bf16 unless a
training case asks for fp32 master weights. Each case appends one JSON line to $OUT/results.jsonl.
"""

import gc
import json
import os
import subprocess
import sys
import time
import traceback

import torch
import transformers
from transformers import AutoConfig, AutoModelForCausalLM

OUT = os.environ.get("OUT", "out")
CFG = os.environ.get("CFG_DIR", "configs")  # one folder per case name, each holding config.json
T0 = time.time()
BUDGET = float(os.environ.get("BUDGET_S", "430"))
res = open(f"{OUT}/results.jsonl", "a")


def emit(d):
    res.write(json.dumps(d) + "\n")
    res.flush()
    print(json.dumps(d), flush=True)


def smi_used():
    try:
        out = subprocess.check_output(
            ["nvidia-smi", "--query-gpu=memory.used,memory.total", "--format=csv,noheader,nounits"]
        )
        used, total = out.decode().split(",")[:2]
        return int(used), int(total)
    except Exception:
        return None, None


def reset():
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()


def tensors_bytes(obj, seen, depth=0):
    if depth > 6:
        return 0
    if isinstance(obj, torch.Tensor):
        if id(obj) in seen:
            return 0
        seen.add(id(obj))
        return obj.numel() * obj.element_size()
    if isinstance(obj, (list, tuple)):
        return sum(tensors_bytes(o, seen, depth + 1) for o in obj)
    if isinstance(obj, dict):
        return sum(tensors_bytes(o, seen, depth + 1) for o in obj.values())
    if hasattr(obj, "__dict__") and not isinstance(obj, (type, torch.nn.Module)):
        return sum(tensors_bytes(v, seen, depth + 1) for v in vars(obj).values())
    return 0


def build(name, dtype):
    cfg = AutoConfig.from_pretrained(f"{CFG}/{name}")
    with torch.device("cuda"):
        try:
            m = AutoModelForCausalLM.from_config(cfg, dtype=dtype, attn_implementation="sdpa")
        except TypeError:
            m = AutoModelForCausalLM.from_config(cfg, torch_dtype=dtype, attn_implementation="sdpa")
    if next(m.parameters()).device.type != "cuda":
        m = m.cuda()
    return m


def vocab_of(m):
    c = m.config
    return getattr(c, "vocab_size", None) or c.get_text_config().vocab_size


def infer(name, ctx, batch):
    reset()
    t0 = time.time()
    m = build(name, torch.bfloat16)
    m.eval()
    torch.cuda.synchronize()
    weights = torch.cuda.memory_allocated()
    params = sum(p.numel() for p in m.parameters())
    bufs = sum(b.numel() * b.element_size() for b in m.buffers())
    ids = torch.randint(0, min(vocab_of(m), 30000), (batch, ctx), device="cuda")
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    with torch.no_grad():
        try:
            out = m(input_ids=ids, use_cache=True, logits_to_keep=1)
        except TypeError:
            out = m(input_ids=ids, use_cache=True)
        torch.cuda.synchronize()
        peak_prefill = torch.cuda.max_memory_allocated()
        after_prefill = torch.cuda.memory_allocated()
        kv = tensors_bytes(out.past_key_values, set())
        logits_bytes = out.logits.numel() * out.logits.element_size()
        nxt = out.logits[:, -1:].argmax(-1).clamp(max=999)
        try:
            out2 = m(input_ids=nxt, past_key_values=out.past_key_values, use_cache=True, logits_to_keep=1)
        except TypeError:
            out2 = m(input_ids=nxt, past_key_values=out.past_key_values, use_cache=True)
        torch.cuda.synchronize()
    used, total = smi_used()
    emit(
        dict(
            kind="infer",
            name=name,
            ctx=ctx,
            batch=batch,
            weights_alloc=weights,
            params=params,
            buffers_bytes=bufs,
            ids_bytes=base - weights,
            kv_bytes=kv,
            logits_bytes=logits_bytes,
            after_prefill=after_prefill,
            peak_prefill=peak_prefill,
            peak=torch.cuda.max_memory_allocated(),
            peak_reserved=torch.cuda.max_memory_reserved(),
            smi_used_mib=used,
            secs=round(time.time() - t0, 1),
            cache_type=type(out.past_key_values).__name__,
        )
    )
    del out, out2, m, ids, nxt
    reset()


def train(name, method, seq, batch, ckpt, precision, rank=16, optimizer="adamw", targets="all-linear"):
    reset()
    t0 = time.time()
    dtype = torch.float32 if (precision in ("bf16-mixed", "fp32") and method == "full") else torch.bfloat16
    m = build(name, dtype)
    if method == "lora":
        from peft import LoraConfig, get_peft_model

        tm = "all-linear" if targets == "all-linear" else ["q_proj", "k_proj", "v_proj", "o_proj"]
        m = get_peft_model(
            m,
            LoraConfig(
                r=rank, lora_alpha=2 * rank, target_modules=tm, lora_dropout=0.0, task_type="CAUSAL_LM"
            ),
        )
    if ckpt:
        m.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if method == "lora":
            m.enable_input_require_grads()
    m.config.use_cache = False
    m.train()
    trainable = [p for p in m.parameters() if p.requires_grad]
    n_train = sum(p.numel() for p in trainable)
    if optimizer == "adamw":
        opt = torch.optim.AdamW(trainable, lr=1e-5)
    elif optimizer == "adamw-fused":
        opt = torch.optim.AdamW(trainable, lr=1e-5, fused=True)
    elif optimizer == "adafactor":
        from transformers.optimization import Adafactor

        opt = Adafactor(trainable, lr=1e-5, scale_parameter=False, relative_step=False)
    elif optimizer == "sgd":
        opt = torch.optim.SGD(trainable, lr=1e-5, momentum=0.9)
    else:
        raise ValueError(optimizer)
    ids = torch.randint(0, min(vocab_of(m), 30000), (batch, seq), device="cuda")
    torch.cuda.synchronize()
    weights = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    peaks = []
    for _ in range(2):
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=(precision == "bf16-mixed")):
            loss = m(input_ids=ids, labels=ids, use_cache=False).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        peaks.append(torch.cuda.max_memory_allocated())
    used, total = smi_used()
    emit(
        dict(
            kind="train",
            name=name,
            method=method,
            seq=seq,
            batch=batch,
            grad_ckpt=ckpt,
            precision=precision,
            rank=rank,
            optimizer=optimizer,
            lora_targets=targets,
            weights_alloc=weights,
            trainable=n_train,
            peak_step1=peaks[0],
            peak=max(peaks),
            peak_reserved=torch.cuda.max_memory_reserved(),
            smi_used_mib=used,
            secs=round(time.time() - t0, 1),
        )
    )
    del m, opt, ids, loss, trainable
    reset()


CASES = [
    ("infer", "meta-llama__Llama-3.1-8B", 8192, 1),
    ("train", "meta-llama__Llama-3.2-1B-Instruct", "full", 2048, 4, True, "bf16-mixed"),
    ("train", "meta-llama__Llama-3.1-8B", "lora", 2048, 1, True, "bf16-mixed"),
    ("infer", "meta-llama__Llama-3.1-8B", 32768, 1),
    ("infer", "meta-llama__Llama-3.1-8B", 4096, 8),
    ("infer", "mistralai__Mistral-7B-v0.1", 16384, 1),
    ("infer", "google__gemma-3-4b-it", 32768, 1),
    ("infer", "google__gemma-2-9b", 8192, 1),
    ("infer", "deepseek-ai__DeepSeek-V2-Lite", 8192, 1),
    ("train", "meta-llama__Llama-3.2-1B-Instruct", "full", 2048, 4, False, "bf16-mixed"),
    ("train", "Qwen__Qwen3-1.7B", "full", 4096, 2, True, "bf16"),
    ("train", "meta-llama__Llama-3.1-8B", "lora", 8192, 2, True, "bf16-mixed"),
    ("infer", "Qwen__Qwen3-8B", 16384, 1),
    ("infer", "microsoft__phi-4", 16384, 1),
    ("train", "Qwen__Qwen3-8B", "lora", 4096, 1, False, "bf16-mixed"),
    ("infer", "Qwen__Qwen3-32B", 8192, 1),
    ("infer", "Qwen__Qwen3-30B-A3B", 4096, 1),
]

if __name__ == "__main__":
    import peft

    if os.environ.get("CASES_FILE"):
        CASES = [tuple(c) for c in json.load(open(os.environ["CASES_FILE"]))]

    used0, total = smi_used()
    free, visible = torch.cuda.mem_get_info()
    emit(
        dict(
            kind="device",
            torch=torch.__version__,
            transformers=transformers.__version__,
            peft=peft.__version__,
            name=torch.cuda.get_device_name(),
            visible_bytes=visible,
            free_bytes=free,
            smi_total_mib=total,
            smi_used_idle_mib=used0,
            props_total=torch.cuda.get_device_properties(0).total_memory,
        )
    )
    for case in CASES:
        if time.time() - T0 > BUDGET:
            emit(dict(kind="skipped", case=list(case)))
            continue
        try:
            (infer if case[0] == "infer" else train)(*case[1:])
        except Exception as e:  # keep going: one failure must not lose the others
            emit(
                dict(
                    kind="error",
                    case=list(case),
                    error=f"{type(e).__name__}: {e}"[:500],
                    tb=traceback.format_exc()[-1500:],
                )
            )
            reset()
    print("done in", round(time.time() - T0), "s", file=sys.stderr)
