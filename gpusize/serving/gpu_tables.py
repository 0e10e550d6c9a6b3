"""Facts gpusize keeps by a GPU's catalog name rather than as fields of GpuSpec (pure tables): its
streaming multiprocessors and the device name engines file tuned kernel configs under. A plan reads a
GPU's name only through these tables and core/network.py's DGX rails (`NAME_KEYED`), so two GPU types
whose names no table knows share a plan when everything else a plan reads is equal (serving/plan_key.py).
"""

from __future__ import annotations

from collections.abc import Mapping

from gpusize.core.network import DGX_GBIT_PER_GPU

__all__ = ["DEVICE_NAME", "NAME_KEYED", "SM_COUNT"]

#: Streaming multiprocessors (NVIDIA) or compute units (AMD) per GPU, from the vendors' architecture
#: whitepapers and datasheets: A100 (NVIDIA A100 Tensor Core GPU Architecture, 108 SMs), H100 SXM5 /
#: PCIe (NVIDIA H100 Tensor Core GPU Architecture, 132 / 114), H200 and GH200 (the H100 die, 132),
#: B200 (NVIDIA Blackwell datasheet, 148), L40S / L40 / RTX 6000 Ada (142), L4 (58), RTX 4090 (128),
#: RTX 5090 (170), RTX PRO 6000 Blackwell (188), A10 (72), A40 / RTX A6000 (84), MI300X / MI325X (AMD
#: CDNA 3 whitepaper, 304 CUs), MI350X / MI355X (AMD CDNA 4 whitepaper, 256 CUs).
SM_COUNT: dict[str, int] = {
    "A100-40GB": 108,
    "A100-80GB": 108,
    "A100-40GB-PCIe": 108,
    "A100-80GB-PCIe": 108,
    "H100-SXM": 132,
    "H100-NVL": 132,
    "H100-PCIe": 114,
    "H200-SXM": 132,
    "H200-NVL": 132,
    "GH200": 132,
    "GH200-144GB": 132,
    "B200": 148,
    "L40S": 142,
    "L40": 142,
    "RTX6000-Ada": 142,
    "L4": 58,
    "RTX4090": 128,
    "RTX5090": 170,
    "RTX-PRO-6000": 188,
    "A10": 72,
    "A40": 84,
    "RTX-A6000": 84,
    "MI300X": 304,
    "MI325X": 304,
    "MI350X": 256,
    "MI355X": 256,
}
#: Catalog GPU -> `torch.cuda.get_device_name()` (NVML's name, what both engines read) with spaces as
#: underscores, as the config files spell it (e.g. vLLM 0.11.0's `E=512,N=64,device_name=NVIDIA_H200.json`,
#: `E=512,N=128,device_name=NVIDIA_H100_80GB_HBM3.json`, `E=64,N=640,device_name=NVIDIA_A100-SXM4-80GB.json`).
DEVICE_NAME = {
    "H200-SXM": "NVIDIA_H200",
    "H100-SXM": "NVIDIA_H100_80GB_HBM3",
    "A100-80GB": "NVIDIA_A100-SXM4-80GB",
    "A100-40GB": "NVIDIA_A100-SXM4-40GB",
    "B200": "NVIDIA_B200",
    "MI300X": "AMD_Instinct_MI300X",
    "MI325X": "AMD_Instinct_MI325X",
}
#: Every table a plan looks a GPU's catalog name up in.
NAME_KEYED: tuple[Mapping[str, object], ...] = (SM_COUNT, DEVICE_NAME, DGX_GBIT_PER_GPU)
