"""What FSDP1 keeps through backward beyond the sharded accounting when LoRA / QLoRA is checkpointed
with reentrant `torch.utils.checkpoint` (pure): each decoder layer's input and its gradient, until the
backward pass ends.

Read at the releases fms-acceleration's 2409 table pinned (scripts/benchmarks/refs/requirements.txt
at 4e81c64: torch 2.4.1, transformers 4.44.2, peft 0.12.0, accelerate 0.33.0); the hook call is in
torch 2.1.0 to 2.6.0 (not 2.0.1), the rest unchanged in 2.5.1 and 2.6.0:

1. Reentrant checkpointing. transformers 4.38-4.57 `PreTrainedModel.gradient_checkpointing_enable`
   (4.44.2 modeling_utils.py:2361-2362) defaults to `{"use_reentrant": True}` (earlier 4.x leave
   it to torch, whose default is True), and the Trainer
   passes `{}` (trainer.py:2067-2073), for which torch takes `use_reentrant=True`
   (utils/checkpoint.py:456-466). transformers 5.0 switched the default to False
   (modeling_utils.py:3099). `Kernels.reentrant_checkpointing`.
2. The decoder layer's FSDP unit is frozen. For a PEFT model under FSDP the Trainer installs PEFT's
   wrap policy (trainer.py:4714 `fsdp_auto_wrap_policy(self.model)`; peft 0.12.0 utils/other.py:440-446
   wraps every leaf module whose weight trains, the LoRA A and B, as a unit of its own), so the
   layer's flat parameter holds frozen weights only.
3. In the recomputed forward, run by `CheckpointFunction.backward` on detached copies of the saved
   inputs (utils/checkpoint.py:290), FSDP's `_pre_forward` (fsdp/_runtime_utils.py:343-401) runs in
   full (the unit saw no pre-backward hook: its forward ran under no_grad) and, for a frozen flat
   parameter, `_register_post_backward_reshard_only_hook` (:1475-1503) registers a multi-grad hook on
   the layer's inputs. `register_multi_grad_hook` (autograd/graph.py:469, 498) keeps, in the hook's
   closure, the AccumulateGrad node of each input, a leaf here (graph.py:159-164), and that node holds
   the leaf itself: a Python / C++ cycle the garbage collector does not see (csrc/autograd/
   python_cpp_function.cpp `THPCppFunction_traverse` visits a node's hook dicts, never
   AccumulateGrad's variable; pytorch/pytorch#183211 on FSDP1's cycles through AccumulateGrad).
4. The leaf receives its gradient in `.grad` (`torch.autograd.backward` then `inp.grad`,
   utils/checkpoint.py:313-315). Leaf, saved input storage and gradient stay alive until
   `_finalize_params` removes the hook (_runtime_utils.py:1178) in the post-backward final callback,
   at the end of the backward pass (:1105).

So the checkpoints are not freed layer by layer as backward goes, and each layer's input gradient
(hidden x the residual dtype per token, the checkpoint's size) joins them: at the first layer's
backward the GPU holds every checkpoint twice over plus that layer's working set. Full fine-tuning
under FSDP is not affected (its units' flat parameters train, `_runtime_utils.py:1489`), nor
non-reentrant checkpointing (no detached leaves), nor a single GPU.
"""

from __future__ import annotations

from gpusize.core.spec import ModelSpec
from gpusize.training.activations import checkpoint_bytes_per_token
from gpusize.training.setup import TrainSetup

__all__ = ["input_grads_kept_bytes", "reshard_hook_keeps_inputs"]


def reshard_hook_keeps_inputs(setup: TrainSetup, num_gpus: int) -> bool:
    """True when FSDP1's reshard-only hook keeps every checkpointed layer's input and its gradient
    until the end of backward: LoRA / QLoRA (frozen decoder units) under FSDP on 2+ GPUs, with
    reentrant checkpoints kept on the GPU."""
    return (
        num_gpus > 1
        and setup.sharding == "fsdp"
        and setup.method != "full"
        and setup.grad_ckpt
        and setup.kernels.reentrant_checkpointing
        and not setup.kernels.offload_checkpoints
    )


def input_grads_kept_bytes(spec: ModelSpec, setup: TrainSetup, num_gpus: int) -> int:
    """The layer-input gradients held at the first layer's backward, on top of the checkpoints that
    are no longer freed as backward goes: one per decoder layer, each the size of its checkpoint."""
    if not reshard_hook_keeps_inputs(setup, num_gpus):
        return 0
    return checkpoint_bytes_per_token(spec, setup) * setup.tokens_per_gpu
