"""Run by test_distributed.py under torchrun (2 gloo processes): SRigL + DDP, rank-specific data and seeds.
Rank 0 writes whether every rank held the same masks after every update (and the same weights at the end)."""

import json
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F

from iclr24.paperkit.distributed import cleanup_distributed
from iclr24.paperkit.distributed import init_distributed
from iclr24.paperkit.distributed import wrap_ddp
from iclr24.srigl import SRigL
from iclr24.srigl import mlp


def same_on_all_ranks(t: torch.Tensor) -> bool:
    parts = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, t)
    return all(torch.equal(parts[0], p) for p in parts[1:])


def main() -> None:
    info = init_distributed(backend="gloo", device="cpu")
    torch.manual_seed(100 + info.rank)  # different local init, masks seed and data on each rank
    model = mlp(16, (32, 32), 4)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sp = SRigL(model, opt, 0.9, 60, delta_t=5, gamma_sal=0.5, distribution="uniform")  # seed=None: per rank
    ddp = wrap_ddp(model, info)
    checks = [same_on_all_ranks(torch.cat([m.flatten() for m in sp.masks.values()]).to(torch.uint8))]
    n_updates = 0
    for _ in range(40):
        x, y = torch.randn(16, 16), torch.randint(0, 4, (16,))
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(ddp(x), y).backward()
        opt.step()
        if sp.step():
            n_updates += 1
            masks = torch.cat([m.flatten() for m in sp.masks.values()]).to(torch.uint8)
            checks.append(same_on_all_ranks(masks))
            sp.check_invariants()
    params_equal = same_on_all_ranks(torch.cat([p.detach().flatten() for p in model.parameters()]))
    if info.rank == 0:
        with open(sys.argv[1], "w") as f:
            json.dump(
                {
                    "world": info.world_size,
                    "updates": n_updates,
                    "masks_equal": checks,
                    "params_equal": params_equal,
                    "ablated": sp.n_ablated(),
                },
                f,
            )
    cleanup_distributed()


if __name__ == "__main__":
    main()
