"""Plots with gnuplot (PNG): each plot's script and data are kept beside the
results (build/repro/plots/), and the report links the image."""

import os
import subprocess


COLOURS = ["#1b6ac9", "#d1495b", "#2a9d3f", "#8f5bd1", "#e08a00", "#555555", "#17a2b8", "#b5651d"]


class Plotter:
    def __init__(self, img_dir, data_dir, enabled):
        self.img_dir = img_dir
        self.data_dir = data_dir
        self.enabled = enabled
        self.made = []
        os.makedirs(data_dir, exist_ok=True)
        if enabled:
            os.makedirs(img_dir, exist_ok=True)

    def plot(self, name, title, xlabel, ylabel, series, logx=False, logy=False, xrange=None,
             yrange=None, key="top right", hlines=(), xtics=None, size=(800, 480)):
        """series: dicts with label, points [(x, y)] or [(x, y, lo, hi)], and
        style 'lines', 'linespoints', 'points' or 'errorbars'; optional dash
        (a dashtype) and colour. hlines: (y, label) dashed lines."""
        lines = [f'set terminal pngcairo size {size[0]},{size[1]} font "DejaVu Sans,10"',
                 f'set output "{os.path.join(self.img_dir, name + ".png")}"',
                 f'set title "{title}"', f'set xlabel "{xlabel}"', f'set ylabel "{ylabel}"',
                 "set grid lc rgb '#dddddd'", f"set key {key}", "set termoption noenhanced"]
        if logx:
            lines.append("set logscale x")
        if logy:
            lines.append("set logscale y")
        if xrange:
            lines.append(f"set xrange [{xrange[0]}:{xrange[1]}]")
        if yrange:
            lines.append(f"set yrange [{yrange[0]}:{yrange[1]}]")
        if xtics:
            lines.append("set xtics (" + ", ".join(f'"{l}" {x}' for l, x in xtics) + ")")
        plots = []
        data = []
        for i, s in enumerate(series):
            block = f"$d{i}"
            rows = [" ".join(f"{v:.10g}" for v in p) for p in s["points"]]
            data.append(f"{block} << EOD\n" + "\n".join(rows) + "\nEOD")
            colour = s.get("colour", COLOURS[i % len(COLOURS)])
            dash = f" dt {s['dash']}" if s.get("dash") else ""
            label = s["label"].replace('"', "'")
            style = s.get("style", "linespoints")
            if style == "errorbars":
                plots.append(f'{block} using 1:2:3:4 with yerrorlines lc rgb "{colour}" lw 1.5 pt 7 ps 0.8'
                             f'{dash} title "{label}"')
            elif style == "points":
                plots.append(f'{block} using 1:2 with points lc rgb "{colour}" pt {s.get("pt", 7)} ps 1.3 '
                             f'title "{label}"')
            else:
                marks = " pt 7 ps 0.6" if style == "linespoints" else ""
                plots.append(f'{block} using 1:2 with {style} lc rgb "{colour}" lw 1.8{marks}'
                             f'{dash} title "{label}"')
        for j, (y, label) in enumerate(hlines):
            plots.append(f'{y} with lines dt {2 + j} lc rgb "{"#333333" if j == 0 else "#999999"}" lw 1.5 '
                         f'title "{label}"')
        script = "\n".join(data + lines) + "\nplot " + ", \\\n     ".join(plots) + "\n"
        path = os.path.join(self.data_dir, name + ".gp")
        with open(path, "w") as f:
            f.write(script)
        if self.enabled:
            subprocess.run(["gnuplot", path], check=True)
        self.made.append(name)
        return f"![{title}](img/{name}.png)"
