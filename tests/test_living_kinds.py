"""Living lessons in the build (issue 17, round 2): the `line`, `value`, `snapshot` and
`figure` kinds in a small project, verify and the scans of docs/ prose."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from support import ROOT, block

EXP = ROOT / "experiments"

SNAP = block("snapshot", "Experiment: experiments/multiple_paths.py", "Title: 第 4 步：两个 3 相加",
             "Label: 实验观察", "Precision: 3",
             body="""
             对象 | 值 | 说明
             `x * x` 的梯度 | @xx.grad | 生成
             同一个值 | @xx.grad = 6.0 | 手写并比对
             公式 | $x + x$ {@xx.grad = 6.0} | 公式照写
             分支 | `vs.add(prev_g, g)` | 手写
             """)
FIG = block("figure", "Experiment: experiments/multiple_paths.py", "Graph: xx.graph", "Title: x·x 的计算图",
            "Caption: 乘法节点 M 的两个参数都是 R")
REAL = block("real-source", "File: autograd/core.py", "Symbol: backward_pass", "Commit: f53a217")

PAGE = ("# 活的课程\n\n"
        '见 [[line: core.py::backward_pass "outgrad = outgrads.pop(node)"]]，'
        '以及 [[line: core.py::backward_pass "for parent, ingrad" .. "outgrads[parent]"|file]]；'
        "梯度是 [[value: multiple_paths xx.grad]]。\n\n" + SNAP + "\n" + FIG)


def _site(site, page=PAGE, name="a.md"):
    shutil.copy(EXP / "multiple_paths.py", site.root / "experiments" / "multiple_paths.py")
    site.page(name, page)
    return site


def _html(site, name="a"):
    return (site.root / "site" / name / "index.html").read_text(encoding="utf-8")
