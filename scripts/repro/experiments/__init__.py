"""The report's sections, one module per seed paper and one for the
fixed-confidence checks; each exposes section(ctx) -> markdown."""

from . import (bachman_precup2013, bubeck2013, chen2017, fixed_confidence, gabillon2011,
               kalyanakrishnan_stone2010)


SECTIONS = [  # name, function, title (in the order of the report)
    ("gabillon", gabillon2011.section, "Gabillon et al. 2011"),
    ("ks", kalyanakrishnan_stone2010.section, "Kalyanakrishnan & Stone 2010"),
    ("bubeck", bubeck2013.section, "Bubeck et al. 2013"),
    ("bp", bachman_precup2013.section, "Bachman & Precup 2013"),
    ("chen", chen2017.section, "Chen et al. 2017"),
    ("fc", fixed_confidence.section, "Fixed confidence"),
]

# The longest simulations first, so that both workers stay busy to the end.
START_ORDER = ["ks", "fc", "bp", "gabillon", "chen", "bubeck"]
