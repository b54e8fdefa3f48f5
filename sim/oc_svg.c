/*
 * oc_svg.c — the sample size of every scenario as one SVG figure
 * (sim_oc_svg): a histogram per scenario, stacked, on a common axis of
 * pulls, each with its mean and its 5% and 95% quantiles marked. Read from
 * the JSON report alone, as the Markdown is.
 */
#include "sim/oc.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "base/buf.h"

#define SVG_W 720.0
#define SVG_PANEL 110.0 /* height of one scenario's panel */
#define SVG_LEFT 60.0
#define SVG_RIGHT 20.0
#define SVG_TOP 30.0

static double num(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* s with the five characters XML gives a meaning escaped. */
static void text(struct buf *b, const char *s)
{
    for (; *s != '\0'; s++) {
        switch (*s) {
        case '<':
            buf_puts(b, "&lt;");
            break;
        case '>':
            buf_puts(b, "&gt;");
            break;
        case '&':
            buf_puts(b, "&amp;");
            break;
        case '"':
            buf_puts(b, "&quot;");
            break;
        case '\'':
            buf_puts(b, "&apos;");
            break;
        default:
            buf_put(b, s, 1);
        }
    }
}

/* The quantile of level q in a sample_size object, or NaN. */
static double quantile_at(const json_t *n, double q)
{
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(n, "quantiles"), i,
                       x) if (fabs(num(x, "level") - q) < 1e-9) return num(x, "value");
    return NAN;
}

char *sim_oc_svg(const json_t *report)
{
    const json_t *list = json_object_get(report, "scenarios");
    size_t ns = json_array_size(list);
    /* One axis for all: 0 to the largest sample size of any run. */
    double hi = 1;
    size_t i;
    json_t *s;
    json_array_foreach(list, i, s) hi = fmax(hi, num(json_object_get(s, "sample_size"), "max"));
    const double w = SVG_W - SVG_LEFT - SVG_RIGHT, height = SVG_TOP + SVG_PANEL * (double)ns + 40;
    struct buf b;
    buf_init(&b, 0);
    buf_printf(&b,
               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
               "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n"
               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
               "<text x=\"%.0f\" y=\"18\" font-size=\"13\">Sample size N per scenario (%.0f runs "
               "each): histogram, mean (solid), 5%% and 95%% quantiles (dashed)</text>\n",
               SVG_W, height, SVG_W, height, SVG_LEFT, num(report, "runs"));
    json_array_foreach(list, i, s)
    {
        const json_t *n = json_object_get(s, "sample_size");
        const json_t *h = json_object_get(n, "histogram");
        const json_t *edges = json_object_get(h, "edges"), *counts = json_object_get(h, "counts");
        double top = SVG_TOP + SVG_PANEL * (double)i, base = top + SVG_PANEL - 25, most = 0;
        size_t k;
        json_t *c;
        json_array_foreach(counts, k, c) most = fmax(most, json_number_value(c));
        buf_printf(&b, "<text x=\"%.0f\" y=\"%.1f\">", SVG_LEFT, top + 12);
        text(&b, json_string_value(json_object_get(s, "name")));
        buf_printf(&b, " — E[N] = %.1f</text>\n", num(n, "mean"));
        buf_printf(&b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>\n",
                   SVG_LEFT, base, SVG_LEFT + w, base);
        json_array_foreach(counts, k, c)
        {
            double lo = json_number_value(json_array_get(edges, k));
            double up = json_number_value(json_array_get(edges, k + 1));
            double x0 = SVG_LEFT + w * lo / hi, x1 = SVG_LEFT + w * up / hi;
            double bh = most > 0 ? (SVG_PANEL - 45) * json_number_value(c) / most : 0;
            if (x1 - x0 < 2)
                x1 = x0 + 2; /* every run at one N: still a visible bar */
            buf_printf(&b,
                       "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
                       "fill=\"#6b8fb5\" stroke=\"white\" stroke-width=\"0.5\"><title>%.0f–%.0f: "
                       "%.0f runs</title></rect>\n",
                       x0, base - bh, x1 - x0, bh, lo, up, json_number_value(c));
        }
        const double marks[3] = {num(n, "mean"), quantile_at(n, 0.05), quantile_at(n, 0.95)};
        for (int m = 0; m < 3; m++) {
            if (isnan(marks[m]))
                continue;
            double x = SVG_LEFT + w * marks[m] / hi;
            buf_printf(&b,
                       "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#b5473a\" "
                       "stroke-width=\"1.5\"%s/>\n",
                       x, top + 18, x, base, m == 0 ? "" : " stroke-dasharray=\"4 3\"");
        }
    }
    /* The common axis under the last panel: five ticks. */
    double axis = SVG_TOP + SVG_PANEL * (double)ns - 25;
    for (int t = 0; t <= 4; t++) {
        double v = hi * t / 4.0, x = SVG_LEFT + w * t / 4.0;
        buf_printf(&b,
                   "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>"
                   "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n",
                   x, axis, x, axis + 4, x, axis + 16, v);
    }
    buf_printf(&b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">pulls</text>\n</svg>\n",
               SVG_LEFT + w / 2, axis + 30);
    size_t len;
    return buf_detach(&b, &len);
}
