"""The run's config, the trainer's phase now and the selected iteration's timings."""

from __future__ import annotations

import time

from textual.widgets import Static

from bot.run_files import ELAPSED_METRIC
from tui.watch.model import WatchModel
from tui.watch.text import seconds

#: config keys shown per algorithm family, with their labels.
CFR_SETTINGS = (("iterations", "iterations"), ("traversals", "traversals"), ("width", "width"),
                ("sgd_steps", "Adam steps"))
NFSP_SETTINGS = (("steps", "steps"), ("num_envs", "hands in parallel"), ("width", "width"),
                 ("rl_capacity", "M_RL"), ("sl_capacity", "M_SL"))


def config_line(model: WatchModel) -> str:
    config = model.config
    settings = NFSP_SETTINGS if model.kind == "nfsp" else CFR_SETTINGS
    parts = [f"[b]{model.kind} on {config.get('game', '?')}[/b]", f"seed {config.get('seed', '?')}"]
    parts += [f"{label} {config[key]:,}" for key, label in settings if isinstance(config.get(key), int)]
    return " · ".join(parts)


def phase_line(model: WatchModel, now: float | None = None) -> str:
    """What the trainer does now (``status.json``), or why that is not known."""
    status = model.reader.status()
    if status is None:
        return f"phase: not recorded by {model.kind} runs · {len(model.iterations):,} metrics lines"
    phase, iteration = status.get("phase", "?"), status.get("iteration", "?")
    if phase == "finished":
        return f"phase: [b]finished[/b] after iteration {iteration}"
    alive = model.reader.process_alive()
    if alive is False:
        return f"phase: trainer stopped during iteration {iteration} ({phase}); resume with --resume"
    since = float(status.get("since", 0.0))
    age = max(0.0, (now if now is not None else time.time()) - since)
    return f"phase: [b reverse] {phase} [/] iteration {iteration} · for {seconds(age)}"


def timing_line(model: WatchModel, iteration: int) -> str:
    record = model.record(iteration)
    if not record:
        return "no iteration logged yet"
    if model.kind == "nfsp":
        return (f"step {iteration:,}: {record.get('hands', 0):,} hands · ε {record.get('epsilon', 0):.4f} · "
                f"η {record.get('eta', 0):.3f} · training {seconds(record.get(ELAPSED_METRIC))}")
    return " · ".join([f"iteration {iteration}: traverse {seconds(record.get('traversal_s'))}",
                       f"fit {seconds(record.get('training_s'))}", f"eval {seconds(record.get('evaluation_s'))}",
                       f"run total {seconds(record.get(ELAPSED_METRIC))}"])


def strength_line(model: WatchModel, iteration: int) -> str | None:
    """The latest strength measurement at or before ``iteration`` (hold'em and FHP runs log a
    duplicate match against a fixed reference and LBR instead of exact exploitability:
    ``training/contract/strength.py``), or None."""
    measured = [r for r in model.records if int(r["iteration"]) <= iteration and ("h2h_mbb" in r or "lbr_mbb" in r)]
    if not measured:
        return None
    record = measured[-1]
    parts = [f"strength at {'step' if model.kind == 'nfsp' else 'iteration'} {int(record['iteration']):,}:"]
    if "h2h_mbb" in record:
        sample = (f"{record['h2h_boards']:,} boards, exact over hands" if "h2h_boards" in record
                  else f"{record.get('h2h_hands', 0):,} hands, duplicate")
        parts.append(f"vs {record.get('h2h_reference', '?')} [b]{record['h2h_mbb']:+.0f} ± {record['h2h_ci_mbb']:.0f}[/b] mbb/g "
                     f"({sample})")
    if "lbr_mbb" in record:
        parts.append(f"LBR {record['lbr_mbb']:.0f} ± {record['lbr_ci_mbb']:.0f} mbb/g ({record.get('lbr_hands', 0):,} hands)")
    return " ".join(parts)


class RunPanel(Static):
    """Config, phase and timings (three lines), and the latest strength measurement if any."""

    def show(self, model: WatchModel, iteration: int) -> None:
        lines = [config_line(model), phase_line(model), timing_line(model, iteration), strength_line(model, iteration)]
        self.update("\n".join(line for line in lines if line is not None))
