"""Money and power (pure): job cost and scaling arithmetic, server power and PSU sizing.

POWER_GUIDE below is the server vendor's sizing article the power constants reproduce.

Prices are indicative (catalog snapshot, dated); every figure here is an estimate of a plan,
never a quote.
"""

from __future__ import annotations

import math

from gpusize.dataclass import dataclass

__all__ = [
    "CPU_W_PER_SOCKET",
    "HOURS_PER_MONTH",
    "PLATFORM_W",
    "POWER_GUIDE",
    "PSU_MARGIN",
    "PowerPlan",
    "break_even_months",
    "cost_per_million_tokens",
    "job_cost",
    "multi_gpu_hours",
    "multi_gpu_job_cost",
    "pcie_lanes",
    "power_plan",
    "scaling_efficiency",
    "sockets_for",
]

#: The article the power figures follow: Huananzhi, "Какой сервер для нейросетей купить" (a server
#: vendor's GPU-server sizing guide, huananzhi.ru): CPU, platform and PSU figures for 4x RTX 4090
#: and 8x H100 servers.
POWER_GUIDE = "Huananzhi GPU-server sizing guide (huananzhi.ru)"

#: Hours in a month of continuous operation (365 / 12 x 24).
HOURS_PER_MONTH = 730.0


def job_cost(rate_per_hour: float, hours: float) -> float:
    """Total cost of a job = infrastructure rate per hour x hours to finish."""
    return rate_per_hour * hours


def multi_gpu_hours(single_gpu_hours: float, measured_speedup: float) -> float:
    """Multi-GPU completion time = single-GPU time / measured speedup."""
    return single_gpu_hours / measured_speedup


def multi_gpu_job_cost(multi_rate_per_hour: float, single_gpu_hours: float, measured_speedup: float) -> float:
    """Multi-GPU job cost = multi-GPU rate x single-GPU time / measured speedup."""
    return multi_rate_per_hour * single_gpu_hours / measured_speedup


def scaling_efficiency(measured_speedup: float, num_gpus: int) -> float:
    """Scaling efficiency = measured speedup / number of GPUs (3.2 / 4 = 0.80)."""
    return measured_speedup / num_gpus


def break_even_months(purchase_usd: float, rent_usd_per_hour: float, hours_per_month: float) -> float | None:
    """Months of renting at `hours_per_month` that cost as much as buying: purchase / (rate x hours).
    Buying here is the purchase price alone (no host, power or operations), so the true break-even
    comes later."""
    monthly = rent_usd_per_hour * hours_per_month
    return purchase_usd / monthly if monthly > 0 else None


def cost_per_million_tokens(rate_per_hour: float, tokens_per_s: float) -> float | None:
    """Dollars per million generated tokens at a sustained aggregate throughput."""
    if tokens_per_s <= 0:
        return None
    return rate_per_hour / (tokens_per_s * 3600) * 1e6


# --------------------------------------------------------------------------- power

#: The server vendor's guide (POWER_GUIDE): each CPU socket draws 200-350 W ("CPU 200-350 W"); board,
#: drives and fans add PLATFORM_W, which reproduces its totals: 4x RTX 4090 (1800 W) -> 2300-2450 W
#: ("2300-2500 W"),
#: 8x H100 SXM (5600 W) with two CPUs -> from 6300 W ("6300 W").
CPU_W_PER_SOCKET = (200.0, 350.0)
PLATFORM_W = 300.0
#: PSU capacity over the peak estimate; with the guide's examples it gives its PSU choices:
#: 2450 W x 1.2 -> 2x 1600 W; 6600 W x 1.2 -> 3x 3000 W, 4x with N+1 redundancy ("4x 3000 W").
PSU_MARGIN = 1.2
#: Module sizes: 1600 W units up to two, 3000 W (Titanium) units above.
SMALL_PSU_W, LARGE_PSU_W = 1600, 3000


@dataclass(frozen=True)
class PowerPlan:
    """A server's power: GPU draw, the total range and the power-supply modules that carry it."""

    gpu_w: float
    total_w_low: float
    total_w_high: float
    psu_capacity_w: float
    psu_modules: int
    psu_module_w: int

    @property
    def layout(self) -> str:
        return (
            f"{self.psu_modules}x {self.psu_module_w} W "
            f"(N+1 redundant: {self.psu_modules + 1}x {self.psu_module_w} W)"
        )


def sockets_for(num_gpus: int) -> int:
    """One CPU socket feeds up to 4 GPUs at x16; eight GPUs sit on a dual-socket host (POWER_GUIDE)."""
    return 1 if num_gpus <= 4 else 2


def power_plan(tdp_w: float, num_gpus: int) -> PowerPlan:
    """GPU TDP sum + CPUs + platform -> a PSU capacity with margin and a module layout."""
    gpu = tdp_w * num_gpus
    low, high = (gpu + cpu * sockets_for(num_gpus) + PLATFORM_W for cpu in CPU_W_PER_SOCKET)
    capacity = high * PSU_MARGIN
    module = SMALL_PSU_W if capacity <= 2 * SMALL_PSU_W else LARGE_PSU_W
    return PowerPlan(gpu, low, high, round(capacity), math.ceil(capacity / module), module)


def pcie_lanes(num_gpus: int) -> int:
    """PCIe lanes the GPUs alone take at x16 each (POWER_GUIDE: four x16 GPUs -> a dual-EPYC class host)."""
    return 16 * num_gpus
