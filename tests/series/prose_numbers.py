"""Numbers deliberately left as plain text in lesson prose.

Every other value in prose that an experiment can observe is a ``[[value: …]]``
reference, a cell of a ``snapshot`` block, or asserted by the page's experiment.
Each entry is ``(page, text, reason)``: ``text`` occurs verbatim in ``docs/<page>``
(outside code blocks), and ``reason`` says why the number is not taken from a run.
"""

PROSE_NUMBERS = [
    # -- chosen inputs and dimensions of the worked examples (the experiments take them as given)
    ("lessons/01-ad-and-graph.md", "并在 $x = 1.5$ 处求导", "the chosen input point of the running example"),
    ("lessons/01-ad-and-graph.md", "对 $n = 5$ 的输入", "the chosen input dimension of the cost experiment"),
    (
        "lessons/09-why-reverse.md",
        "每层结束时存活的节点（n = 64）",
        'the chosen width of the layer-by-layer count (an input of reverse_mode_scaling.py)',
    ),
    (
        "lessons/10-higher-order.md",
        "`f` 执行时的 `top`（2）",
        "printed and asserted by higher_order.py (`sin_call.top`); kept in a sentence that lists what the output shows",
    ),
    (
        "lessons/03-grad-call-chain.md",
        "## 第 2 站：`trace` 把 3.0 装进 Box",
        "the chosen input of simple_grad.py (`df(3.0)`), in a heading",
    ),
    (
        "lessons/04-tracer-and-box.md",
        "把 2.0 装成 `a`",
        "the chosen value of trace_box.py's two_traces (`new_box(2.0, t0, root_a)`)",
    ),
    (
        "lessons/04-tracer-and-box.md",
        "把 5.0 装成 `b`",
        "the chosen value of trace_box.py's two_traces (`new_box(5.0, t1, root_b)`)",
    ),
    (
        "lessons/10-higher-order.md",
        "而不是 1.5。",
        "the chosen input of higher_order.py (X0 = 1.5), in the hand-worked timeline",
    ),
    (
        "lessons/10-higher-order.md",
        "| `(1.5,)` {@sin_call.unwrapping.3.args",
        "the chosen input X0 = 1.5 of higher_order.py, shown as the argument tuple of the recursive call",
    ),
    (
        "lessons/10-higher-order.md",
        "D | `1.5`（float）",
        "the chosen input X0 = 1.5 of higher_order.py, unboxed at the innermost call",
    ),
    (
        "lessons/12-gradient-check.md",
        "把点挪到 0.3 就通过",
        "the chosen input of the relu experiment below it (`check_grads(relu, ...)(0.3)`)",
    ),
    # -- thresholds and tolerances of assertions (properties of the check, not observations)
    (
        "lessons/01-ad-and-graph.md",
        "误差缩小的倍数在 5 到 20 之间",
        "an assertion's bounds in lesson01_ad_and_graph.py",
    ),
    (
        "lessons/01-ad-and-graph.md",
        "误差缩小的倍数在 50 到 200 之间",
        "an assertion's bounds in lesson01_ad_and_graph.py",
    ),
    (
        "lessons/01-ad-and-graph.md",
        "两种差分的误差都重新超过了 $10^{-6}$",
        "an assertion's threshold in lesson01_ad_and_graph.py",
    ),
    ("lessons/01-ad-and-graph.md", "在断言的相对容差 $10^{-12}$ 以内一致", "the relative tolerance of an assertion"),
    ("lessons/08-forward-mode.md", "在 $10^{-12}$ 内相等（断言", "the tolerance of an assertion in forward_mode.py"),
    # -- counts and values stated and asserted by the page's experiment (not yet recorded under a key)
    (
        "lessons/01-ad-and-graph.md",
        "调用了 `loss` 正好 $2n = 10$ 次",
        "asserted by lesson01_ad_and_graph.py (recorded as calls.central; the formula 2n is the point of the sentence)",
    ),
    ("lessons/02-jvp-vjp.md", "两次 JVP 之后，`f` 的累计次数是 3（断言）", "asserted by jvp_vjp.py"),
    ("lessons/02-jvp-vjp.md", "累计 4 次，断言", "asserted by jvp_vjp.py"),
    ("lessons/02-jvp-vjp.md", "VJP closure 被调用了 2 次（断言）", "asserted by jvp_vjp.py"),
    (
        "lessons/09-why-reverse.md",
        "也就是 6 个长度为 $n$ 的 float64 数组，共 $6\\times 8\\times n$ 字节",
        'derived from the table above, whose cells are checked; asserted by reverse_mode_scaling.py '
        '(captured_arrays, bytes_per_n)',
    ),
    (
        "lessons/11-operator-composition.md",
        "6\\cdot 2) = (2, 10, -12)",
        'hand derivation inside display math; asserted by operator_composition.py',
    ),
    ("lessons/12-gradient-check.md", "$N(3)=14$", "a formula's value; asserted by gradient_check.py"),
    (
        "lessons/03-grad-call-chain.md",
        "## 第 6 站：结果 6.0",
        "a heading (the table of contents shows plain text); asserted by simple_grad.py (g == 6.0), "
        "recorded as station6.result",
    ),
    # -- hand derivations in formulas (the lesson's point is the algebra; the experiment asserts the result)
    (
        "lessons/05-reverse-mode.md",
        "正确的导数是 2.0",
        "d/dy(2.0 * y) derived by hand (2.0 is the chosen input of escaped_box.py's first call); "
        "escaped_box.py asserts the swapped operands return it (escaped.right)",
    ),
    (
        "lessons/05-reverse-mode.md",
        "带着正确的 2.0",
        "the same hand-derived d/dy(2.0 * y), carried by the new root; asserted by escaped_box.py",
    ),
    (
        "lessons/05-reverse-mode.md",
        "而不是 2.0，没有警告",
        "the same hand-derived d/dy(2.0 * y), in the self-test answer; asserted by escaped_box.py",
    ),
    (
        "lessons/07-broadcasting.md",
        "$\\bar{b} = 1+2+3+4+5+6 = 21$",
        'an exercise answer derived by hand; broadcasting.py asserts 21.0',
    ),
    (
        "lessons/07-broadcasting.md",
        "$\\bar{b} = [5, 7, 9]$",
        'an exercise answer derived by hand; broadcasting.py asserts it',
    ),
    (
        "lessons/07-broadcasting.md",
        "$\\bar{c} = [[6], [15]]$",
        'an exercise answer derived by hand; broadcasting.py asserts it',
    ),
    (
        "lessons/11-operator-composition.md",
        "代入同样得到 $(2, 10, -12)$",
        'the same hand derivation by another route; asserted',
    ),
    (
        "lessons/10-higher-order.md",
        "把 2.0 装进 Box",
        "the input of the self-test's runnable snippet (grad(grad(f))(2.0)), which the build ran and recorded",
    ),
]
