# svgplot.py — one small SVG line chart for bench/compress/ (accuracy.py's loss curves,
# plot_speed.py's speed-ups): log-scale y, linear or log-scale x, a polyline per curve, a legend.
# No plotting package: the benchmarks run where only the standard library is sure to be.
import math

COLORS = ["#000000", "#1f77b4", "#2ca02c", "#d62728", "#9467bd", "#ff7f0e"]


def svg(title, curves, path, xlabel="step", ylabel="loss (log scale)", xlog=False, xfmt=lambda x: "%d" % x):
    """curves: [(name, [(x, y), ...]), ...] with y > 0 (and x > 0 when xlog) drawn; written to path."""
    W, H, L, R, T, B = 640, 400, 60, 150, 30, 40
    fx = math.log10 if xlog else (lambda v: v)
    xs = [fx(s) for _, c in curves for s, _ in c if s > 0 or not xlog]
    ys = [math.log10(v) for _, c in curves for _, v in c if v > 0]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    y1 += (y1 - y0) * 0.05 or 0.1
    y0 -= (y1 - y0) * 0.05 or 0.1
    px = lambda s: L + (fx(s) - x0) / ((x1 - x0) or 1) * (W - L - R)  # noqa: E731
    py = lambda v: T + (y1 - math.log10(v)) / (y1 - y0) * (H - T - B)  # noqa: E731
    o = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="11">' % (W, H),
         '<rect width="100%" height="100%" fill="white"/>',
         '<text x="%d" y="18" font-size="13">%s</text>' % (L, title),
         '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, H - B, W - R, H - B),
         '<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>' % (L, T, L, H - B),
         '<text x="%d" y="%d" text-anchor="middle">%s</text>' % ((L + W - R) // 2, H - 8, xlabel),
         '<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">%s</text>'
         % ((T + H - B) // 2, (T + H - B) // 2, ylabel)]
    for k in range(5):
        s = x0 + (x1 - x0) * k / 4
        s = 10 ** s if xlog else s
        o.append('<text x="%.1f" y="%d" text-anchor="middle">%s</text>' % (px(s), H - B + 14, xfmt(s)))
        v = 10 ** (y0 + (y1 - y0) * k / 4)
        o.append('<text x="%d" y="%.1f" text-anchor="end">%.3g</text>' % (L - 4, py(v) + 4, v))
        o.append('<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>' % (L, py(v), W - R, py(v)))
    for i, (name, c) in enumerate(curves):
        pts = " ".join("%.1f,%.1f" % (px(s), py(v)) for s, v in c if v > 0 and (s > 0 or not xlog))
        o.append('<polyline fill="none" stroke="%s" stroke-width="1.3" points="%s"/>' % (COLORS[i % 6], pts))
        o.append('<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>'
                 % (W - R + 10, T + 10 + 16 * i, W - R + 30, T + 10 + 16 * i, COLORS[i % 6]))
        o.append('<text x="%d" y="%d">%s</text>' % (W - R + 35, T + 14 + 16 * i, name))
    o.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(o) + "\n")
