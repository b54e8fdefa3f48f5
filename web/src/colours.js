// colours.js — the arms' colours, pure (no DOM: the browser test also
// checks it in Node).
//
// Arms are often named after colours (a button test: red, green, blue), and
// an arm called "red" drawn in blue misleads. So:
// 1. an arm whose name is a colour word, or holds exactly one ("Green
//    button", "btn_red"), is drawn in a shade of that colour readable on
//    white (NAMED; a second arm naming the same colour a darker shade);
// 2. the other arms take the Okabe–Ito palette (told apart with the common
//    colour-vision deficiencies) in order, skipping every entry a named arm
//    took and every entry that could be called by the name of another arm
//    (no "control" drawn in vermilion beside an arm named "red").
// Words without a readable shade on white ("white", "cream") are not in
// NAMED: such arms take the palette like any other.
export const PALETTE = [
  ['#0072B2', ['blue']],
  ['#D55E00', ['red', 'orange', 'vermilion', 'vermillion']],
  ['#009E73', ['green', 'teal']],
  ['#CC79A7', ['pink', 'purple', 'magenta', 'violet']],
  ['#E69F00', ['orange', 'yellow', 'amber', 'gold']],
  ['#56B4E9', ['blue', 'cyan', 'sky', 'turquoise']],
  ['#000000', ['black']],
  ['#8C6D31', ['brown', 'olive']],
];
export const NAMED = {
  red: '#D62728', green: '#2CA02C', blue: '#0072B2', orange: '#F28E00', yellow: '#C9A400', gold: '#C9A400',
  amber: '#E69F00', purple: '#7B3FA0', violet: '#8E44AD', pink: '#E377C2', magenta: '#C2189B', cyan: '#17A2B8',
  teal: '#00897B', turquoise: '#1ABC9C', brown: '#8C564B', black: '#000000', grey: '#7F7F7F', gray: '#7F7F7F',
  silver: '#9E9E9E', navy: '#1F3A93', maroon: '#800000', olive: '#808000', lime: '#6AA121', indigo: '#4B0082',
  crimson: '#B0122C', coral: '#E9573F', vermilion: '#D55E00', vermillion: '#D55E00', sky: '#56B4E9',
};

// The colour word an arm's name is, or holds exactly once ("Green button",
// "btn_red"), or null.
export function colourWord(name) {
  const words = String(name).toLowerCase().split(/[^a-z]+/).filter((w) => w in NAMED);
  return new Set(words).size === 1 ? words[0] : null;
}

// hex darkened: each step keeps 70% of every channel (up to three steps).
function darker(hex, steps) {
  const f = 0.7 ** Math.min(steps, 3);
  const c = [1, 3, 5].map((i) => Math.round(parseInt(hex.slice(i, i + 2), 16) * f));
  return `#${c.map((v) => v.toString(16).padStart(2, '0')).join('').toUpperCase()}`;
}

// The colours of a bandit's arms, in order (see above).
export function armColours(names) {
  const words = names.map(colourWord);
  const taken = new Set(words.filter(Boolean).map((w) => NAMED[w]));
  const said = new Set(words.filter(Boolean));
  const free = PALETTE.filter(([hex, calls]) => !taken.has(hex) && !calls.some((c) => said.has(c))).map(([hex]) => hex);
  const pool = free.length > 0 ? free : ['#7F7F7F'];
  const uses = {};
  let k = 0;
  return words.map((w) => {
    if (!w) return pool[k++ % pool.length];
    uses[w] = (uses[w] || 0) + 1;
    return darker(NAMED[w], uses[w] - 1);
  });
}
