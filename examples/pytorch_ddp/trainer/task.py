"""Train a small MLP with DistributedDataParallel across the replicas of a Vertex job.

Run as ``python -m trainer.task [--epochs 2] [--lr 0.1] [--batch_size 64]``; Vertex's
hyperparameter tuning appends ``--lr=0.01`` style arguments (integers may arrive as
``64.0``). Every replica trains on its own shard of the same seeded synthetic data;
the chief reports ``loss`` and ``accuracy`` (cloudml-hypertune format) after every
epoch and alone writes the checkpoint, the model and its final ``metrics.json``.

A retried job resumes: the chief writes ``checkpoint.pt`` (model, optimizer, epoch) to
``AIP_CHECKPOINT_DIR`` after every epoch, whole or not at all, and every replica reads it
at start, as the seeds describe (rank 0 writes, all ranks read); a job preempted after
epoch 2 continues at epoch 3 instead of starting over.

Plain SGD on this problem improves faster with a larger step, so with the default
2 epochs ``--lr 0.1`` gives a lower final ``loss`` than ``--lr 0.01``, and that lower
than ``--lr 0.001``: a grid sweep over those three has trial ``lr=0.1`` as its best.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

import torch
import torch.distributed as dist
from torch import nn

from trainer import data
from trainpool import runtime
from trainpool.runtime import gcs, hypertune, paths
from trainpool.runtime import torch as rt_torch
from trainpool.runtime.args import parse_hyperparameters

DEFAULTS = {"epochs": 2, "lr": 0.1, "batch_size": 64, "output_dir": "./outputs"}


def evaluate(model: nn.Module, inputs: torch.Tensor, labels: torch.Tensor) -> tuple[float, float]:
    """Loss and accuracy over every replica's shard (summed across the process group)."""
    with torch.no_grad():
        logits = model(inputs)
        totals = torch.tensor(
            [
                nn.functional.cross_entropy(logits, labels, reduction="sum").item(),
                (logits.argmax(dim=1) == labels).sum().item(),
                float(len(labels)),
            ],
            dtype=torch.float64,
        )
    dist.all_reduce(totals)
    return (totals[0] / totals[2]).item(), (totals[1] / totals[2]).item()


def save(obj: object, directory: str, name: str) -> str:
    """``torch.save`` to ``directory`` (gs:// resolved to the mount or the local store),
    written whole then renamed, so a preempted write never leaves half a file; returns the
    saved file's address in ``directory``'s terms."""
    local = gcs.local_path(directory)
    os.makedirs(local, exist_ok=True)
    partial = os.path.join(local, f".{name}.partial")
    torch.save(obj, partial)
    os.replace(partial, os.path.join(local, name))
    return directory + name


def write_metrics(metrics: dict[str, float], directory: str) -> None:
    """The final metrics as ``metrics.json`` beside the model, written whole: what the
    pipeline's retraining gate compares for a single job (a sweep's trials report theirs)."""
    local = gcs.local_path(directory)
    os.makedirs(local, exist_ok=True)
    partial = os.path.join(local, ".metrics.json.partial")
    with open(partial, "w", encoding="utf-8") as out:
        json.dump(metrics, out, sort_keys=True)
    os.replace(partial, os.path.join(local, "metrics.json"))


def resume(
    directory: str, model: nn.Module, optimizer: torch.optim.Optimizer, hp: dict[str, object]
) -> int:
    """Load the latest checkpoint of ``directory`` into ``model`` and ``optimizer``; the
    epoch it was written after (0 when there is none, or when it was trained with other
    hyperparameters: a retried sweep may give a trial id other values)."""
    path = os.path.join(gcs.local_path(directory), "checkpoint.pt")
    if not os.path.exists(path):
        return 0
    state = torch.load(path, weights_only=True)
    if state.get("hp") != {k: hp[k] for k in ("lr", "batch_size")}:
        return 0
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return int(state["epoch"])


def main(argv: Sequence[str] | None = None) -> int:
    hp = parse_hyperparameters(DEFAULTS, argv, description=__doc__ or "")
    ctx = runtime.context()
    info = rt_torch.init_process_group(ctx)
    inputs, labels = data.shard(*data.dataset(), info.rank, info.world_size)
    model = rt_torch.ddp(data.model(), info)
    optimizer = torch.optim.SGD(model.parameters(), lr=hp["lr"])
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(inputs, labels),
        batch_size=hp["batch_size"],
        shuffle=True,
        generator=torch.Generator().manual_seed(data.SEED + info.rank),
    )
    checkpoint_dir = paths.job_dir("checkpoints", ctx, hp["output_dir"])
    done = resume(checkpoint_dir, model.module, optimizer, hp)
    if done:
        print(f"{ctx.replica_name} resuming from epoch {done + 1} ({checkpoint_dir})", flush=True)
    for epoch in range(done + 1, hp["epochs"] + 1):
        model.train()
        for batch, target in loader:
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(batch), target).backward()
            optimizer.step()
        loss, accuracy = evaluate(model.module, inputs, labels)
        print(
            f"{ctx.replica_name} rank {info.rank}/{info.world_size} epoch {epoch}: "
            f"loss={loss:.4f} accuracy={accuracy:.4f}",
            flush=True,
        )
        if ctx.is_chief:
            state = {
                "epoch": epoch,
                "model": model.module.state_dict(),
                "optimizer": optimizer.state_dict(),
                "hp": {k: hp[k] for k in ("lr", "batch_size")},
            }
            checkpoint = save(state, checkpoint_dir, "checkpoint.pt")
            hypertune.report_metric("loss", loss, epoch, checkpoint)
            hypertune.report_metric("accuracy", accuracy, epoch, checkpoint)
    loss, accuracy = evaluate(model.module, inputs, labels)  # every rank: it all-reduces
    if ctx.is_chief:
        model_dir = paths.job_dir("model", ctx, hp["output_dir"])
        save(model.module.state_dict(), model_dir, "model.pt")
        write_metrics({"loss": loss, "accuracy": accuracy}, model_dir)
    # every rank waits here for the chief's writes, so none tears its connections down while
    # another still has a collective or a receive pending on them: gloo's pending receive is
    # not interruptible, and a process destroyed under it dies with "terminate called without
    # an active exception" (pytorch/pytorch#28126, facebookincubator/gloo#227), seen here as
    # a replica exiting 139 after its last epoch, which Vertex then restarts alone
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    code = main()
    # Leave without the interpreter's teardown. Even after the barrier and the process
    # group's destruction, a replica exited 139 about once in 60 starts ("terminate called
    # without an active exception", printed after sys.exit: a C++ thread of the distributed
    # stack still joinable when the interpreter's static destructors ran; pytorch/pytorch#28126).
    # Vertex then restarts that replica alone, and it waits for a rendezvous no one joins.
    # Everything this trainer writes is written whole and closed before this point.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
