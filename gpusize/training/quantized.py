"""What QLoRA's 4-bit path keeps for backward beyond the LoRA accounting (pure): the fp32 stream
that PEFT's upcast of the unquantized weights creates, and the inputs bitsandbytes' MatMul4Bit kept
before 0.43.2.

- PEFT `prepare_model_for_kbit_training` (peft 0.11-0.21 utils/other.py: "cast all non INT8
  parameters to fp32") leaves the embeddings and every RMSNorm weight in fp32. The embedding then
  emits fp32, the norms emit `weight(fp32) * x` = fp32, and bitsandbytes' `Linear4bit.forward`
  casts its input to the compute dtype and its output back to the input's dtype
  (`.to(inp_dtype)`, bitsandbytes 0.43-0.49 nn/modules.py): the residual stream, each layer's
  checkpoint and every 4-bit linear's output (q, k, v, gate, up, down) are fp32. The attention
  kernel still works in 16 bits (FlashAttention-2 / SDPA cast q, k, v back).
  TRL's SFTTrainer skips the call for sharded QLoRA (FSDP / ZeRO-3: "one should never call
  prepare_model_for_kbit_training when doing QLoRA + FSDP / DS-Zero3"), and frameworks with their
  own preparation (fms-acceleration's accelerated-peft-bnb, fsdp_qlora) never upcast.
- bitsandbytes before 0.43.2 (`MatMul4Bit.forward`: `ctx.tensors = (A, B)`; fixed by PR #1270,
  2024-07-16, "delete useless buffered activation") saved each 4-bit linear's input for a weight
  gradient it never computes. Its maintainer's note in georgian-io/LLM-Finetuning-Toolkit#189
  (2024-07-25): "for each sequence ... 70B: 10.1GB for seqlen=1024". Under checkpointing only the
  layer being recomputed holds them.
"""

from __future__ import annotations

from gpusize.core.spec import LayerSpec, ModelSpec
from gpusize.training.anatomy import Linear, mixer_linears, mlp_linears
from gpusize.training.setup import TrainSetup, state_bytes

__all__ = ["bnb_saved_input_bytes", "fp32_stream", "linear_output_bytes"]


def fp32_stream(setup: TrainSetup) -> bool:
    """True when the residual stream and the 4-bit linears' outputs are fp32: QLoRA under autocast
    with PEFT's upcast of the unquantized weights, on one GPU or replicated (DDP, ZeRO-1/2)."""
    return (
        setup.method == "qlora"
        and setup.kernels.upcast_unquantized
        and setup.precision == "bf16-mixed"
        and setup.sharding not in ("fsdp", "zero3")
    )


def linear_output_bytes(setup: TrainSetup) -> float:
    """Bytes per element of a decoder linear's output: fp32 on QLoRA's fp32 stream, else the
    activation dtype."""
    return 4.0 if fp32_stream(setup) else state_bytes(setup.precision, setup.method, setup).activation


def _saved(lins: tuple[Linear, ...], modules: tuple[str, ...], width: int, setup: TrainSetup) -> float:
    """What MatMul4Bit keeps of one input shared by the linears of `modules`, per token. On the fp32
    stream each linear casts the input to 16 bits itself: one copy each. Otherwise the input is the
    16-bit tensor itself, extra unless a LoRA adapter (PEFT 0.1x under autocast: no cast) keeps it."""
    group = [lin for lin in lins if lin.module in modules]
    if not group:
        return 0.0
    if fp32_stream(setup):
        return len(group) * width * 2.0
    adapted = any(lin.module in setup.lora_modules for lin in group)
    return 0.0 if adapted else width * 2.0


def _mlp_saved(spec: ModelSpec, setup: TrainSetup, width: int) -> float:
    lins = mlp_linears(spec, width)
    return _saved(lins, ("gate", "up"), spec.hidden_size, setup) + _saved(lins, ("down",), width, setup)


def bnb_saved_input_bytes(spec: ModelSpec, layer: LayerSpec, setup: TrainSetup) -> float:
    """Per token, in one decoder layer: the 4-bit linears' inputs MatMul4Bit kept before
    bitsandbytes 0.43.2 (`Kernels.bnb_saves_input`): q/k/v's and gate/up's shared inputs and down's
    input (the SwiGLU product); o_proj's input is the attention kernel's output, kept anyway. For
    MoE, each of the top-k experts' MLPs."""
    if setup.method != "qlora" or not setup.kernels.bnb_saves_input:
        return 0.0
    total = _saved(mixer_linears(spec, layer), ("q", "k", "v"), spec.hidden_size, setup)
    if layer.ffn == "none":
        return total
    if layer.ffn == "dense" or spec.moe is None:
        return total + _mlp_saved(spec, setup, layer.intermediate_size)
    moe = spec.moe
    total += moe.num_experts_per_tok * _mlp_saved(spec, setup, moe.moe_intermediate_size)
    if moe.shared_intermediate_size:
        total += _mlp_saved(spec, setup, moe.shared_intermediate_size)
    return total
