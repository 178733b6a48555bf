"""One panel's numbers: scikit-learn's t-SNE of a set of embeddings and the silhouette of its labels, in the 2-D map
and in the embedding space, so a map's clusters are also a number."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

CSV_COLUMNS = ("speech", "utterance", "speaker", "emotion", "x", "y")


@dataclass
class Panel:
    speech: str  # "original" or the anonymizer's label
    ids: list[str]
    speakers: list[str]
    emotions: list[str]
    vectors: np.ndarray  # [N, D], the embeddings
    points: np.ndarray  # [N, 2], their t-SNE coordinates


def tsne(vectors: np.ndarray, settings: dict, random_state: int) -> np.ndarray:
    """sklearn.manifold.TSNE(n_components=2, **settings, random_state) of [N, D] vectors."""
    from sklearn.manifold import TSNE

    return TSNE(n_components=2, random_state=random_state, **settings).fit_transform(vectors).astype(np.float64)


def silhouette(points: np.ndarray, labels: list[str], metric: str = "euclidean") -> float | None:
    """sklearn's mean silhouette of `labels` over `points`; None where it is undefined (one label, or one per point)."""
    from sklearn.metrics import silhouette_score

    classes = len(set(labels))
    if classes < 2 or classes > len(labels) - 1:
        return None
    return float(silhouette_score(points, labels, metric=metric))


def write_csv(path: Path, panels: list[Panel]) -> Path:
    """Every panel's points, one line per utterance (the figure draws exactly these)."""
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(CSV_COLUMNS)
        for p in panels:
            for uid, speaker, emotion, (x, y) in zip(p.ids, p.speakers, p.emotions, p.points):
                writer.writerow([p.speech, uid, speaker, emotion, repr(float(x)), repr(float(y))])
    return path


def draw(folder: Path, name: str, title: str, panels: list[Panel], order: list[str]) -> tuple[Path, Path]:
    """The paper's layout: one panel per speech, colours = emotions (in `order`), marker shapes = speakers; PNG and
    PDF."""
    from matplotlib.lines import Line2D

    from vpeval.report.figures import COLOURS, MARKERS, new_figure, save, style

    present = {e for p in panels for e in p.emotions}
    emotions = [e for e in order if e in present]
    speakers = sorted({s for p in panels for s in p.speakers})
    with style():
        fig, axes = new_figure(len(panels))
        for letter, (ax, p) in zip("abcdefghijklmnopqrstuvwxyz", zip(axes[0], panels)):
            emotion_of, speaker_of = np.asarray(p.emotions), np.asarray(p.speakers)
            for i, emotion in enumerate(emotions):
                for j, speaker in enumerate(speakers):
                    chosen = (emotion_of == emotion) & (speaker_of == speaker)
                    if chosen.any():
                        ax.scatter(
                            p.points[chosen, 0],
                            p.points[chosen, 1],
                            s=10,
                            color=COLOURS[i % len(COLOURS)],
                            marker=MARKERS[j % len(MARKERS)],
                            linewidths=0,
                        )
            ax.set_title(f"({letter}) {p.speech}")
            ax.set_xticks([])
            ax.set_yticks([])
        fig.suptitle(title)
        # one legend for colours (emotions) and one for shapes (speakers), as the paper's caption reads them
        colour = [Line2D([], [], ls="", marker="o", color=COLOURS[i % len(COLOURS)]) for i in range(len(emotions))]
        shape = [Line2D([], [], ls="", marker=MARKERS[j % len(MARKERS)], color="0.3") for j in range(len(speakers))]
        fig.legend(colour + shape, emotions + speakers, loc="outside lower center", frameon=False,
                   ncols=min(len(emotions) + len(speakers), 8))  # fmt: skip
        return save(fig, folder, name)
