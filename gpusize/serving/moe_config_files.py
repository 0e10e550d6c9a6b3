"""Tuned fused-MoE Triton config files each engine release ships (generated data).

Written by bench/moe_configs_build.py from the release wheels on PyPI (file names of
vllm/model_executor/layers/fused_moe/configs/ and sglang/srt/layers/moe/fused_moe_triton/configs/
triton_*/), kept for the GPUs of `moe_config.DEVICE_NAME`; keys as `moe_config.normalise` writes
them. Do not edit by hand."""

__all__ = ["NAMES", "SHIPPED"]

#: Every file name read, once; each release lists the indices of its files.
NAMES: tuple[str, ...] = (
    "E=1,N=14336,device_name=NVIDIA_A100-SXM4-80GB",
    "E=1,N=14336,device_name=NVIDIA_A100-SXM4-80GB,dtype=int8_w8a16",
    "E=1,N=1792,device_name=NVIDIA_A100-SXM4-80GB",
    "E=1,N=1792,device_name=NVIDIA_A100-SXM4-80GB,dtype=int8_w8a16",
    "E=1,N=1792,device_name=NVIDIA_H100_80GB_HBM3,dtype=int8_w8a16",
    "E=1,N=3072,device_name=NVIDIA_A100-SXM4-80GB,dtype=int8_w8a16",
    "E=1,N=3072,device_name=NVIDIA_H100_80GB_HBM3",
    "E=1,N=3072,device_name=NVIDIA_H100_80GB_HBM3,dtype=int8_w8a16",
    "E=1,N=3072,device_name=NVIDIA_H200,dtype=int8_w8a16",
    "E=1,N=3584,device_name=NVIDIA_A100-SXM4-80GB",
    "E=1,N=3584,device_name=NVIDIA_A100-SXM4-80GB,dtype=int8_w8a16",
    "E=1,N=3584,device_name=NVIDIA_H100_80GB_HBM3,dtype=int8_w8a16",
    "E=1,N=7168,device_name=NVIDIA_A100-SXM4-80GB",
    "E=1,N=7168,device_name=NVIDIA_A100-SXM4-80GB,dtype=int8_w8a16",
    "E=1,N=7168,device_name=NVIDIA_H100_80GB_HBM3,dtype=int8_w8a16",
    "E=128,N=1024,device_name=AMD_Instinct_MI300X",
    "E=128,N=1024,device_name=AMD_Instinct_MI300X,dtype=fp8_w8a8",
    "E=128,N=1024,device_name=AMD_Instinct_MI325X,dtype=fp8_w8a8",
    "E=128,N=1024,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8",
    "E=128,N=1024,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8_down",
    "E=128,N=1024,device_name=NVIDIA_H200",
    "E=128,N=1024,device_name=NVIDIA_H200,dtype=fp8_w8a8",
    "E=128,N=1344,device_name=NVIDIA_B200",
    "E=128,N=1344,device_name=NVIDIA_H100_80GB_HBM3",
    "E=128,N=1856,device_name=NVIDIA_B200",
    "E=128,N=1856,device_name=NVIDIA_H100_80GB_HBM3",
    "E=128,N=1856,device_name=NVIDIA_H200,dtype=fp8_w8a8",
    "E=128,N=192,device_name=NVIDIA_A100-SXM4-80GB",
    "E=128,N=192,device_name=NVIDIA_H100_80GB_HBM3",
    "E=128,N=192,device_name=NVIDIA_H200",
    "E=128,N=192,device_name=NVIDIA_H200,dtype=fp8_w8a8",
    "E=128,N=232,device_name=NVIDIA_B200",
    "E=128,N=232,device_name=NVIDIA_H100_80GB_HBM3",
    "E=128,N=2688,device_name=NVIDIA_B200",
    "E=128,N=2688,device_name=NVIDIA_H100_80GB_HBM3",
    "E=128,N=2880,device_name=NVIDIA_H100_80GB_HBM3",
    "E=128,N=352,device_name=NVIDIA_B200",
    "E=128,N=352,device_name=NVIDIA_H100_80GB_HBM3",
    "E=128,N=352,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8",
    "E=128,N=384,device_name=AMD_Instinct_MI300X,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=128,N=384,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=128,N=384,device_name=NVIDIA_H100_80GB_HBM3",
    "E=128,N=384,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=128,N=384,device_name=NVIDIA_H200",
    "E=128,N=384,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=128,N=464,device_name=NVIDIA_B200",
    "E=128,N=464,device_name=NVIDIA_H100_80GB_HBM3",
    "E=128,N=512,device_name=NVIDIA_B200",
    "E=128,N=512,device_name=NVIDIA_B200,dtype=fp8_w8a8",
    "E=128,N=512,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=128,N=512,device_name=NVIDIA_H100_80GB_HBM3",
    "E=128,N=512,device_name=NVIDIA_H200",
    "E=128,N=512,device_name=NVIDIA_H200,dtype=fp8_w8a8",
    "E=128,N=512,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=128,N=704,device_name=NVIDIA_B200",
    "E=128,N=704,device_name=NVIDIA_B200,dtype=fp8_w8a8",
    "E=128,N=704,device_name=NVIDIA_H100_80GB_HBM3",
    "E=128,N=704,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8",
    "E=128,N=704,device_name=NVIDIA_H200",
    "E=128,N=768,device_name=AMD_Instinct_MI300X,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=128,N=768,device_name=NVIDIA_B200",
    "E=128,N=768,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=128,N=768,device_name=NVIDIA_H100_80GB_HBM3",
    "E=128,N=768,device_name=NVIDIA_H200",
    "E=128,N=768,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=128,N=8960,device_name=NVIDIA_H100_80GB_HBM3,dtype=bf16",
    "E=128,N=8960,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8",
    "E=128,N=928,device_name=NVIDIA_B200",
    "E=128,N=928,device_name=NVIDIA_H100_80GB_HBM3",
    "E=128,N=96,device_name=NVIDIA_H200",
    "E=128,N=96,device_name=NVIDIA_H200,dtype=fp8_w8a8",
    "E=129,N=352,device_name=NVIDIA_B200,dtype=fp8_w8a8",
    "E=129,N=384,device_name=NVIDIA_H200",
    "E=129,N=704,device_name=NVIDIA_B200,dtype=fp8_w8a8",
    "E=144,N=512,device_name=NVIDIA_H100_80GB_HBM3",
    "E=16,N=1024,device_name=AMD_Instinct_MI300X",
    "E=16,N=1024,device_name=NVIDIA_B200",
    "E=16,N=1024,device_name=NVIDIA_B200,dtype=fp8_w8a8",
    "E=16,N=1024,device_name=NVIDIA_H100_80GB_HBM3",
    "E=16,N=1024,device_name=NVIDIA_H200",
    "E=16,N=1024,device_name=NVIDIA_H200,dtype=fp8_w8a8",
    "E=16,N=1344,device_name=NVIDIA_A100-SXM4-40GB",
    "E=16,N=1344,device_name=NVIDIA_A100-SXM4-80GB",
    "E=16,N=1344,device_name=NVIDIA_H100_80GB_HBM3",
    "E=16,N=1408,device_name=NVIDIA_H100_80GB_HBM3",
    "E=16,N=14336,device_name=NVIDIA_A100-SXM4-80GB",
    "E=16,N=14336,device_name=NVIDIA_A100-SXM4-80GB,dtype=int8_w8a16",
    "E=16,N=14336,device_name=NVIDIA_H100_80GB_HBM3,dtype=int8_w8a16",
    "E=16,N=1792,device_name=NVIDIA_A100-SXM4-80GB",
    "E=16,N=1792,device_name=NVIDIA_A100-SXM4-80GB,dtype=int8_w8a16",
    "E=16,N=1792,device_name=NVIDIA_H100_80GB_HBM3",
    "E=16,N=1792,device_name=NVIDIA_H100_80GB_HBM3,dtype=int8_w8a16",
    "E=16,N=1856,device_name=NVIDIA_B200",
    "E=16,N=1856,device_name=NVIDIA_H100_80GB_HBM3",
    "E=16,N=2048,device_name=NVIDIA_B200",
    "E=16,N=2048,device_name=NVIDIA_H100_80GB_HBM3",
    "E=16,N=2048,device_name=NVIDIA_H200",
    "E=16,N=2048,device_name=NVIDIA_H200,dtype=fp8_w8a8",
    "E=16,N=2688,device_name=NVIDIA_A100-SXM4-80GB",
    "E=16,N=2688,device_name=NVIDIA_H100_80GB_HBM3",
    "E=16,N=3072,device_name=NVIDIA_A100-SXM4-80GB,dtype=int8_w8a16",
    "E=16,N=3072,device_name=NVIDIA_H100_80GB_HBM3,dtype=float8",
    "E=16,N=3072,device_name=NVIDIA_H100_80GB_HBM3,dtype=int8_w8a16",
    "E=16,N=3072,device_name=NVIDIA_H200,dtype=int8_w8a16",
    "E=16,N=3200,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8",
    "E=16,N=3584,device_name=NVIDIA_A100-SXM4-80GB",
    "E=16,N=3584,device_name=NVIDIA_A100-SXM4-80GB,dtype=int8_w8a16",
    "E=16,N=3584,device_name=NVIDIA_H100_80GB_HBM3,dtype=int8_w8a16",
    "E=16,N=4096,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=16,N=4096,device_name=NVIDIA_H200",
    "E=16,N=4096,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=16,N=6400,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8",
    "E=16,N=7168,device_name=NVIDIA_A100-SXM4-80GB",
    "E=16,N=7168,device_name=NVIDIA_A100-SXM4-80GB,dtype=int8_w8a16",
    "E=16,N=7168,device_name=NVIDIA_H100_80GB_HBM3,dtype=float8",
    "E=16,N=7168,device_name=NVIDIA_H100_80GB_HBM3,dtype=int8_w8a16",
    "E=16,N=800,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8",
    "E=160,N=192,device_name=AMD_Instinct_MI300X",
    "E=160,N=192,device_name=NVIDIA_H200,dtype=fp8_w8a8",
    "E=160,N=384,device_name=AMD_Instinct_MI300X,dtype=fp8_w8a8",
    "E=160,N=384,device_name=NVIDIA_B200,dtype=fp8_w8a8",
    "E=160,N=384,device_name=NVIDIA_H200,dtype=fp8_w8a8",
    "E=160,N=640,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=160,N=640,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=161,N=192,device_name=NVIDIA_B200,dtype=fp8_w8a8,per_channel_quant=True",
    "E=161,N=192,device_name=NVIDIA_H200",
    "E=161,N=192,device_name=NVIDIA_H200,dtype=fp8_w8a8,per_channel_quant=True",
    "E=161,N=384,device_name=NVIDIA_B200,dtype=fp8_w8a8,per_channel_quant=True",
    "E=161,N=384,device_name=NVIDIA_H200,dtype=fp8_w8a8,per_channel_quant=True",
    "E=192,N=192,device_name=NVIDIA_B200,dtype=fp8_w8a8",
    "E=20,N=1536,device_name=NVIDIA_H200",
    "E=20,N=1536,device_name=NVIDIA_H200,dtype=fp8_w8a8,per_channel_quant=True",
    "E=20,N=2048,device_name=NVIDIA_H100_80GB_HBM3",
    "E=20,N=2560,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=24,N=1024,device_name=NVIDIA_H100_80GB_HBM3",
    "E=256,N=1024,device_name=AMD_Instinct_MI325X,block_shape=[128,128]",
    "E=256,N=128,device_name=NVIDIA_A100-SXM4-80GB,dtype=int8_w8a8",
    "E=256,N=128,device_name=NVIDIA_A100-SXM4-80GB,dtype=int8_w8a8,block_shape=[128,128]",
    "E=256,N=128,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=256,N=1344,device_name=NVIDIA_B200",
    "E=256,N=1344,device_name=NVIDIA_H100_80GB_HBM3",
    "E=256,N=256,device_name=AMD_Instinct_MI300X,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=256,N=256,device_name=AMD_Instinct_MI325X,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=256,N=256,device_name=NVIDIA_B200",
    "E=256,N=256,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=256,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=256,N=2688,device_name=NVIDIA_B200",
    "E=256,N=2688,device_name=NVIDIA_H100_80GB_HBM3",
    "E=256,N=320,device_name=NVIDIA_H200,dtype=fp8_w8a8",
    "E=256,N=384,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=256,N=512,device_name=NVIDIA_B200",
    "E=256,N=512,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=256,N=512,device_name=NVIDIA_H100_80GB_HBM3",
    "E=256,N=512,device_name=NVIDIA_H200",
    "E=256,N=512,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=256,N=512,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]_down",
    "E=256,N=672,device_name=NVIDIA_B200",
    "E=256,N=672,device_name=NVIDIA_H100_80GB_HBM3",
    "E=257,N=128,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=257,N=128,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=257,N=256,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=257,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=257,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]_down",
    "E=257,N=512,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=257,N=512,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=257,N=64,device_name=NVIDIA_A100-SXM4-80GB",
    "E=264,N=256,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=264,N=256,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=272,N=128,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=32,N=1408,device_name=NVIDIA_B200",
    "E=32,N=1792,device_name=AMD_Instinct_MI325X",
    "E=32,N=1792,device_name=NVIDIA_B200",
    "E=32,N=1792,device_name=NVIDIA_H100_80GB_HBM3",
    "E=32,N=1856,device_name=NVIDIA_B200",
    "E=32,N=1856,device_name=NVIDIA_H100_80GB_HBM3",
    "E=32,N=2048,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=32,N=2048,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=32,N=224,device_name=AMD_Instinct_MI325X",
    "E=32,N=224,device_name=NVIDIA_B200",
    "E=32,N=224,device_name=NVIDIA_H100_80GB_HBM3",
    "E=32,N=4096,device_name=NVIDIA_H200",
    "E=32,N=448,device_name=AMD_Instinct_MI325X",
    "E=32,N=448,device_name=NVIDIA_B200",
    "E=32,N=448,device_name=NVIDIA_H100_80GB_HBM3",
    "E=32,N=768,device_name=NVIDIA_H100_80GB_HBM3",
    "E=32,N=896,device_name=AMD_Instinct_MI325X",
    "E=32,N=896,device_name=NVIDIA_B200",
    "E=32,N=896,device_name=NVIDIA_H100_80GB_HBM3",
    "E=32,N=928,device_name=NVIDIA_B200",
    "E=32,N=928,device_name=NVIDIA_H100_80GB_HBM3",
    "E=384,N=128,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=384,N=128,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=384,N=256,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=385,N=128,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=385,N=128,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=40,N=1536,device_name=NVIDIA_B200,dtype=fp8_w8a8",
    "E=40,N=1536,device_name=NVIDIA_H200,dtype=fp8_w8a8,per_channel_quant=True",
    "E=40,N=2560,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=512,N=128,device_name=NVIDIA_A100-SXM4-80GB",
    "E=512,N=128,device_name=NVIDIA_B200",
    "E=512,N=128,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=512,N=128,device_name=NVIDIA_H100_80GB_HBM3",
    "E=512,N=128,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=512,N=128,device_name=NVIDIA_H200",
    "E=512,N=128,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=512,N=128,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]_down",
    "E=512,N=1344,device_name=NVIDIA_B200",
    "E=512,N=1344,device_name=NVIDIA_H100_80GB_HBM3",
    "E=512,N=160,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[32,32]",
    "E=512,N=160,device_name=NVIDIA_H200",
    "E=512,N=256,device_name=NVIDIA_B200",
    "E=512,N=256,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=512,N=256,device_name=NVIDIA_H100_80GB_HBM3",
    "E=512,N=256,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=512,N=256,device_name=NVIDIA_H200",
    "E=512,N=2688,device_name=NVIDIA_B200",
    "E=512,N=2688,device_name=NVIDIA_H100_80GB_HBM3",
    "E=512,N=320,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[64,64]",
    "E=512,N=320,device_name=NVIDIA_H200",
    "E=512,N=336,device_name=NVIDIA_B200",
    "E=512,N=336,device_name=NVIDIA_H100_80GB_HBM3",
    "E=512,N=512,device_name=NVIDIA_B200",
    "E=512,N=512,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=512,N=512,device_name=NVIDIA_H100_80GB_HBM3",
    "E=512,N=512,device_name=NVIDIA_H200",
    "E=512,N=64,device_name=NVIDIA_A100-SXM4-80GB",
    "E=512,N=64,device_name=NVIDIA_B200",
    "E=512,N=64,device_name=NVIDIA_H100_80GB_HBM3",
    "E=512,N=64,device_name=NVIDIA_H200",
    "E=512,N=672,device_name=NVIDIA_B200",
    "E=512,N=672,device_name=NVIDIA_H100_80GB_HBM3",
    "E=512,N=80,device_name=NVIDIA_H200",
    "E=513,N=512,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=513,N=512,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]_down",
    "E=60,N=1408,device_name=AMD_Instinct_MI300X",
    "E=60,N=176,device_name=AMD_Instinct_MI300X",
    "E=60,N=352,device_name=AMD_Instinct_MI300X",
    "E=60,N=704,device_name=AMD_Instinct_MI300X",
    "E=62,N=128,device_name=AMD_Instinct_MI300X",
    "E=62,N=256,device_name=AMD_Instinct_MI300X",
    "E=62,N=256,device_name=NVIDIA_H100_80GB_HBM3",
    "E=62,N=512,device_name=AMD_Instinct_MI300X",
    "E=62,N=512,device_name=NVIDIA_H100_80GB_HBM3",
    "E=64,N=1024,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=64,N=1280,device_name=NVIDIA_A100-SXM4-80GB",
    "E=64,N=1280,device_name=NVIDIA_H100_80GB_HBM3",
    "E=64,N=1280,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8",
    "E=64,N=1280,device_name=NVIDIA_H200",
    "E=64,N=1280,device_name=NVIDIA_H200,dtype=fp8_w8a8",
    "E=64,N=1408,device_name=NVIDIA_B200",
    "E=64,N=1536,device_name=AMD_Instinct_MI325X",
    "E=64,N=1536,device_name=NVIDIA_B200",
    "E=64,N=1536,device_name=NVIDIA_H100_80GB_HBM3",
    "E=64,N=1856,device_name=NVIDIA_B200",
    "E=64,N=1856,device_name=NVIDIA_H100_80GB_HBM3",
    "E=64,N=192,device_name=AMD_Instinct_MI325X",
    "E=64,N=192,device_name=NVIDIA_B200",
    "E=64,N=192,device_name=NVIDIA_H100_80GB_HBM3",
    "E=64,N=2560,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8",
    "E=64,N=2560,device_name=NVIDIA_H200",
    "E=64,N=2560,device_name=NVIDIA_H200,dtype=fp8_w8a8",
    "E=64,N=2688,device_name=NVIDIA_B200",
    "E=64,N=2688,device_name=NVIDIA_H100_80GB_HBM3",
    "E=64,N=320,device_name=NVIDIA_H100_80GB_HBM3",
    "E=64,N=320,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8",
    "E=64,N=320,device_name=NVIDIA_H200",
    "E=64,N=320,device_name=NVIDIA_H200,dtype=fp8_w8a8",
    "E=64,N=384,device_name=AMD_Instinct_MI325X",
    "E=64,N=384,device_name=NVIDIA_B200",
    "E=64,N=384,device_name=NVIDIA_H100_80GB_HBM3",
    "E=64,N=464,device_name=NVIDIA_B200",
    "E=64,N=464,device_name=NVIDIA_H100_80GB_HBM3",
    "E=64,N=512,device_name=NVIDIA_B200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=64,N=512,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=64,N=640,device_name=NVIDIA_A100-SXM4-80GB",
    "E=64,N=640,device_name=NVIDIA_H100_80GB_HBM3",
    "E=64,N=640,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8",
    "E=64,N=640,device_name=NVIDIA_H200",
    "E=64,N=640,device_name=NVIDIA_H200,dtype=fp8_w8a8",
    "E=64,N=768,device_name=AMD_Instinct_MI325X",
    "E=64,N=768,device_name=NVIDIA_B200",
    "E=64,N=768,device_name=NVIDIA_H100_80GB_HBM3",
    "E=64,N=8960,device_name=NVIDIA_H100_80GB_HBM3,dtype=bf16",
    "E=64,N=8960,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8",
    "E=64,N=928,device_name=NVIDIA_B200",
    "E=64,N=928,device_name=NVIDIA_H100_80GB_HBM3",
    "E=65,N=1536,device_name=NVIDIA_H100_80GB_HBM3",
    "E=72,N=192,device_name=AMD_Instinct_MI300X",
    "E=72,N=2048,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=72,N=2048,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]_down",
    "E=72,N=384,device_name=AMD_Instinct_MI300X",
    "E=72,N=384,device_name=NVIDIA_H100_80GB_HBM3",
    "E=72,N=768,device_name=AMD_Instinct_MI300X",
    "E=72,N=768,device_name=NVIDIA_H100_80GB_HBM3",
    "E=8,N=14336,device_name=AMD_Instinct_MI300X",
    "E=8,N=14336,device_name=AMD_Instinct_MI300X,dtype=fp8_w8a8",
    "E=8,N=14336,device_name=AMD_Instinct_MI325X",
    "E=8,N=14336,device_name=AMD_Instinct_MI325X,dtype=fp8_w8a8",
    "E=8,N=14336,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8",
    "E=8,N=14336,device_name=NVIDIA_H200",
    "E=8,N=14336,device_name=NVIDIA_H200,dtype=fp8_w8a8",
    "E=8,N=16384,device_name=AMD_Instinct_MI300X",
    "E=8,N=16384,device_name=AMD_Instinct_MI300X,dtype=fp8_w8a8",
    "E=8,N=16384,device_name=AMD_Instinct_MI325X",
    "E=8,N=16384,device_name=AMD_Instinct_MI325X,dtype=fp8_w8a8",
    "E=8,N=1792,device_name=AMD_Instinct_MI300X",
    "E=8,N=1792,device_name=AMD_Instinct_MI300X,dtype=fp8_w8a8",
    "E=8,N=1792,device_name=AMD_Instinct_MI325X",
    "E=8,N=1792,device_name=AMD_Instinct_MI325X,dtype=fp8_w8a8",
    "E=8,N=1792,device_name=NVIDIA_A100-SXM4-40GB",
    "E=8,N=1792,device_name=NVIDIA_A100-SXM4-80GB",
    "E=8,N=1792,device_name=NVIDIA_H100_80GB_HBM3",
    "E=8,N=1792,device_name=NVIDIA_H200",
    "E=8,N=1792,device_name=NVIDIA_H200,dtype=fp8_w8a8",
    "E=8,N=2048,device_name=AMD_Instinct_MI300X",
    "E=8,N=2048,device_name=AMD_Instinct_MI300X,dtype=fp8_w8a8",
    "E=8,N=2048,device_name=AMD_Instinct_MI325X",
    "E=8,N=2048,device_name=AMD_Instinct_MI325X,dtype=fp8_w8a8",
    "E=8,N=2048,device_name=NVIDIA_A100-SXM4-80GB",
    "E=8,N=2048,device_name=NVIDIA_H100_80GB_HBM3",
    "E=8,N=2048,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8",
    "E=8,N=2048,device_name=NVIDIA_H200",
    "E=8,N=2048,device_name=NVIDIA_H200,dtype=fp8_w8a8",
    "E=8,N=2048,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=8,N=3584,device_name=AMD_Instinct_MI300X",
    "E=8,N=3584,device_name=AMD_Instinct_MI300X,dtype=fp8_w8a8",
    "E=8,N=3584,device_name=AMD_Instinct_MI325X",
    "E=8,N=3584,device_name=AMD_Instinct_MI325X,dtype=fp8_w8a8",
    "E=8,N=3584,device_name=NVIDIA_A100-SXM4-40GB",
    "E=8,N=3584,device_name=NVIDIA_A100-SXM4-80GB",
    "E=8,N=3584,device_name=NVIDIA_H100_80GB_HBM3",
    "E=8,N=3584,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8",
    "E=8,N=3584,device_name=NVIDIA_H200",
    "E=8,N=3584,device_name=NVIDIA_H200,dtype=fp8_w8a8",
    "E=8,N=4096,device_name=AMD_Instinct_MI300X",
    "E=8,N=4096,device_name=AMD_Instinct_MI300X,dtype=fp8_w8a8",
    "E=8,N=4096,device_name=AMD_Instinct_MI325X",
    "E=8,N=4096,device_name=AMD_Instinct_MI325X,dtype=fp8_w8a8",
    "E=8,N=4096,device_name=NVIDIA_A100-SXM4-80GB",
    "E=8,N=4096,device_name=NVIDIA_H100_80GB_HBM3",
    "E=8,N=4096,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8",
    "E=8,N=4096,device_name=NVIDIA_H200",
    "E=8,N=4096,device_name=NVIDIA_H200,dtype=fp8_w8a8",
    "E=8,N=7168,device_name=AMD_Instinct_MI300X",
    "E=8,N=7168,device_name=AMD_Instinct_MI300X,dtype=fp8_w8a8",
    "E=8,N=7168,device_name=AMD_Instinct_MI325X",
    "E=8,N=7168,device_name=AMD_Instinct_MI325X,dtype=fp8_w8a8",
    "E=8,N=7168,device_name=NVIDIA_A100-SXM4-80GB",
    "E=8,N=7168,device_name=NVIDIA_H100_80GB_HBM3",
    "E=8,N=7168,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8",
    "E=8,N=7168,device_name=NVIDIA_H200",
    "E=8,N=7168,device_name=NVIDIA_H200,dtype=fp8_w8a8",
    "E=8,N=8192,device_name=AMD_Instinct_MI300X",
    "E=8,N=8192,device_name=AMD_Instinct_MI300X,dtype=fp8_w8a8",
    "E=8,N=8192,device_name=AMD_Instinct_MI325X",
    "E=8,N=8192,device_name=AMD_Instinct_MI325X,dtype=fp8_w8a8",
    "E=8,N=8192,device_name=NVIDIA_H100_80GB_HBM3,dtype=fp8_w8a8",
    "E=8,N=8192,device_name=NVIDIA_H200,dtype=fp8_w8a8",
    "E=80,N=640,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]",
    "E=80,N=640,device_name=NVIDIA_H200,dtype=fp8_w8a8,block_shape=[128,128]_down",
)
_FILES: dict[tuple[str, str], str] = {
    ("vllm", "0.10.1"): (
        "0 1 2 3 5 6 7 9 10 12 13 15 16 27 28 29 39 43 44 50 59 61 63 64 75 76 77 81 82 83 85 86 88 89 98"
        " 99 100 102 104 105 106 111 112 113 115 116 135 136 137 138 141 142 144 145 234 235 236 237 240 "
        "242 244 245 246 247 248 258 259 260 263 264 265 266 274 275 276 277 278 291 293 294 295 296 297 "
        "298 299 300 301 302 303 304 305 306 307 308 309 310 311 312 313 314 315 316 317 318 319 320 321 "
        "322 324 325 326 327 328 329 330 331 332 333 334 335 336 337 338 339 340 341 342 343 344 345 346 "
        "347 348 349 350 351 352 353 354 355 356 357 "
    ),
    ("vllm", "0.10.2"): (
        "0 1 2 3 5 6 7 9 10 12 13 15 16 27 28 29 38 39 40 43 44 50 55 57 59 61 63 64 75 76 77 81 82 83 85"
        " 86 88 89 98 99 100 102 104 105 106 111 112 113 115 116 122 133 135 136 137 138 141 142 144 145 "
        "152 190 191 192 197 199 201 203 210 212 214 221 223 224 226 228 234 235 236 237 240 242 244 245 "
        "246 247 248 258 259 260 263 264 265 266 274 275 276 277 278 291 293 294 295 296 297 298 299 300 "
        "301 302 303 304 305 306 307 308 309 310 311 312 313 314 315 316 317 318 319 320 321 322 323 324 "
        "325 326 327 328 329 330 331 332 333 334 335 336 337 338 339 340 341 342 343 344 345 346 347 348 "
        "349 350 351 352 353 354 355 356 357 "
    ),
    ("vllm", "0.11.0"): (
        "0 1 2 3 5 6 7 9 10 12 13 15 16 27 28 29 38 39 40 43 44 50 55 57 59 61 63 64 75 76 77 81 82 83 85"
        " 86 88 89 98 99 100 102 104 105 106 111 112 113 115 116 119 122 133 135 136 137 138 141 142 144 "
        "145 152 190 191 192 197 199 201 203 210 212 214 221 223 224 226 228 234 235 236 237 238 239 240 "
        "241 242 244 245 246 247 248 258 259 260 263 264 265 266 274 275 276 277 278 287 290 291 292 293 "
        "294 295 296 297 298 299 300 301 302 303 304 305 306 307 308 309 310 311 312 313 314 315 316 317 "
        "318 319 320 321 322 323 324 325 326 327 328 329 330 331 332 333 334 335 336 337 338 339 340 341 "
        "342 343 344 345 346 347 348 349 350 351 352 353 354 355 356 357 "
    ),
    ("vllm", "0.17.0"): (
        "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 20 21 24 25 26 27 28 29 38 39 40 43 44 47 48 49 50 "
        "51 52 53 55 57 59 60 61 63 64 65 66 68 69 70 75 76 77 79 80 81 82 83 85 86 87 88 89 90 91 96 97 "
        "98 99 100 101 102 103 104 105 106 107 108 110 111 112 113 114 115 116 117 118 119 120 122 133 "
        "135 136 137 138 141 142 144 145 149 151 152 169 175 176 190 191 192 195 197 198 199 200 201 203 "
        "206 210 211 212 213 214 221 222 223 224 225 226 228 229 234 235 236 237 238 239 240 241 242 244 "
        "245 246 247 248 249 258 259 260 263 264 265 266 272 274 275 276 277 278 282 283 287 290 291 292 "
        "293 294 295 296 297 298 299 300 301 302 303 304 305 306 307 308 309 310 311 312 313 314 315 316 "
        "317 318 319 320 321 322 323 324 325 326 327 328 329 330 331 332 333 334 335 336 337 338 339 340 "
        "341 342 343 344 345 346 347 348 349 350 351 352 353 354 355 356 357 "
    ),
    ("vllm", "0.19.1"): (
        "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 20 21 24 25 26 27 28 29 38 39 40 41 43 44 47 48 49 "
        "50 51 52 53 55 57 59 60 61 63 64 65 66 68 69 70 75 76 77 79 80 81 82 83 85 86 87 88 89 90 91 96 "
        "97 98 99 100 101 102 103 104 105 106 107 108 110 111 112 113 114 115 116 117 118 119 120 122 133"
        " 135 136 137 138 141 142 144 145 149 151 152 154 169 172 175 176 190 191 192 195 197 198 199 200"
        " 201 203 206 210 211 212 213 214 221 222 223 224 225 226 228 229 234 235 236 237 238 239 240 241"
        " 242 244 245 246 247 248 249 252 258 259 260 263 264 265 266 272 274 275 276 277 278 282 283 287"
        " 290 291 292 293 294 295 296 297 298 299 300 301 302 303 304 305 306 307 308 309 310 311 312 313"
        " 314 315 316 317 318 319 320 321 322 323 324 325 326 327 328 329 330 331 332 333 334 335 336 337"
        " 338 339 340 341 342 343 344 345 346 347 348 349 350 351 352 353 354 355 356 357 "
    ),
    ("vllm", "0.33.0"): (
        "0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 20 21 24 25 26 27 28 29 35 38 39 40 41 43 44 47 48 "
        "49 50 51 52 53 55 57 59 60 61 63 64 65 66 68 69 70 75 76 77 79 80 81 82 83 85 86 87 88 89 90 91 "
        "96 97 98 99 100 101 102 103 104 105 106 107 108 110 111 112 113 114 115 116 117 118 119 120 122 "
        "133 135 136 137 138 141 142 144 145 148 149 151 152 154 169 172 175 176 190 191 192 195 197 198 "
        "199 200 201 202 203 206 208 210 211 212 213 214 217 221 222 223 224 225 226 228 229 234 235 236 "
        "237 238 239 240 241 242 244 245 246 247 248 249 252 258 259 260 263 264 265 266 272 274 275 276 "
        "277 278 282 283 287 290 291 292 293 294 295 296 297 298 299 300 301 302 303 304 305 306 307 308 "
        "309 310 311 312 313 314 315 316 317 318 319 320 321 322 323 324 325 326 327 328 329 330 331 332 "
        "333 334 335 336 337 338 339 340 341 342 343 344 345 346 347 348 349 350 351 352 353 354 355 356 "
        "357 "
    ),
    ("sglang", "0.5.2"): (
        "0 1 2 3 5 6 7 9 10 12 13 28 29 40 41 42 43 44 50 62 63 64 71 73 74 76 78 79 81 82 83 85 86 88 89"
        " 95 98 99 100 102 104 105 106 111 112 113 115 116 118 121 123 132 134 136 137 138 141 142 144 "
        "145 158 159 160 161 165 166 167 168 191 192 193 194 201 227 243 244 245 246 247 248 258 259 260 "
        "263 264 265 266 273 274 275 276 277 278 294 296 298 299 300 305 307 309 310 311 312 313 318 319 "
        "320 321 322 324 326 328 329 330 331 332 333 335 337 338 339 340 341 342 343 345 347 348 349 350 "
        "351 353 355 356 357 "
    ),
    ("sglang", "0.5.3"): (
        "0 1 2 3 5 6 7 9 10 12 13 28 29 40 41 42 43 44 50 62 63 64 71 73 74 76 78 79 81 82 83 85 86 88 89"
        " 95 98 99 100 102 104 105 106 111 112 113 115 116 118 121 123 132 134 136 137 138 141 142 144 "
        "145 158 159 160 161 165 166 167 168 191 192 193 194 201 203 210 214 227 228 243 244 245 246 247 "
        "248 258 259 260 263 264 265 266 273 274 275 276 277 278 294 296 298 299 300 305 307 309 310 311 "
        "312 313 318 319 320 321 322 324 326 328 329 330 331 332 333 335 337 338 339 340 341 342 343 345 "
        "347 348 349 350 351 353 355 356 357 "
    ),
    ("sglang", "0.5.4.post2"): (
        "0 1 2 3 5 6 7 9 10 12 13 28 29 30 40 41 42 43 44 50 62 63 64 71 73 74 76 78 79 81 82 83 85 86 88"
        " 89 95 98 99 100 102 104 105 106 111 112 113 115 116 118 121 123 132 134 136 137 138 141 142 143"
        " 144 145 158 159 160 161 165 166 167 168 191 192 193 194 201 203 210 214 227 228 243 244 245 246"
        " 247 248 258 259 260 263 264 265 266 273 274 275 276 277 278 294 296 298 299 300 305 307 309 310"
        " 311 312 313 318 319 320 321 322 324 326 328 329 330 331 332 333 335 337 338 339 340 341 342 343"
        " 345 347 348 349 350 351 353 355 356 357 "
    ),
    ("sglang", "0.5.8"): (
        "0 1 2 3 5 6 7 9 10 12 13 22 23 24 25 28 29 30 31 32 33 34 40 41 42 43 44 45 46 50 62 63 64 67 68"
        " 71 73 74 76 78 79 81 82 83 85 86 88 89 92 93 95 98 99 100 102 104 105 106 111 112 113 115 116 "
        "118 120 121 123 124 125 126 127 128 130 131 132 134 136 137 138 139 140 141 142 143 144 145 146 "
        "147 150 156 157 158 159 160 161 165 166 167 168 173 174 188 189 191 192 193 194 196 201 203 206 "
        "207 210 214 215 216 219 220 227 228 229 230 243 244 245 246 247 248 253 254 258 259 260 261 262 "
        "263 264 265 266 270 271 273 274 275 276 277 278 284 285 294 296 298 299 300 305 307 309 310 311 "
        "312 313 318 319 320 321 322 324 326 328 329 330 331 332 333 335 337 338 339 340 341 342 343 345 "
        "347 348 349 350 351 353 355 356 357 "
    ),
    ("sglang", "0.5.9"): (
        "0 1 2 3 5 6 7 9 10 12 13 22 23 24 25 28 29 30 31 32 33 34 40 41 42 43 44 45 46 50 62 63 64 67 68"
        " 71 73 74 76 78 79 81 82 83 85 86 88 89 92 93 94 95 98 99 100 102 104 105 106 111 112 113 115 "
        "116 118 120 121 123 124 125 126 127 128 130 131 132 134 136 137 138 139 140 141 142 143 144 145 "
        "146 147 149 150 156 157 158 159 160 161 162 165 166 167 168 173 174 188 189 191 192 193 194 196 "
        "201 203 206 207 210 213 214 215 216 219 220 227 228 229 230 243 244 245 246 247 248 253 254 258 "
        "259 260 261 262 263 264 265 266 270 271 273 274 275 276 277 278 284 285 294 296 298 299 300 305 "
        "307 309 310 311 312 313 318 319 320 321 322 324 326 328 329 330 331 332 333 335 337 338 339 340 "
        "341 342 343 345 347 348 349 350 351 353 355 356 357 358 359 "
    ),
    ("sglang", "0.5.23"): (
        "0 1 2 3 5 6 7 9 10 12 13 18 19 22 23 24 25 28 29 30 31 32 33 34 36 37 39 40 41 42 43 44 45 46 50"
        " 54 56 58 62 63 64 67 68 71 72 73 74 76 78 79 81 82 83 84 85 86 88 89 92 93 94 95 98 99 100 102 "
        "104 105 106 109 111 112 113 115 116 118 120 121 123 124 125 126 127 128 129 130 131 132 134 136 "
        "137 138 139 140 141 142 143 144 145 146 147 149 150 153 154 155 156 157 158 159 160 161 162 163 "
        "164 165 166 167 168 170 171 172 173 174 177 178 179 180 181 182 183 184 185 186 187 188 189 191 "
        "192 193 194 196 199 201 202 203 204 205 206 207 209 210 213 214 215 216 218 219 220 227 228 229 "
        "230 231 232 233 243 244 245 246 247 248 250 251 252 253 254 255 256 257 258 259 260 261 262 263 "
        "264 265 266 267 268 269 270 271 273 274 275 276 277 278 279 280 281 284 285 286 288 289 294 296 "
        "298 299 300 305 307 309 310 311 312 313 318 319 320 321 322 324 326 328 329 330 331 332 333 335 "
        "337 338 339 340 341 342 343 345 347 348 349 350 351 353 355 356 357 358 359 "
    ),
}
#: (engine, release) -> the config files it ships (normalised names).
SHIPPED: dict[tuple[str, str], frozenset[str]] = {
    key: frozenset(NAMES[int(i)] for i in row.split()) for key, row in _FILES.items()
}
