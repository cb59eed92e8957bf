// Generates official-vectors.json: random posts from the classes where a hand-made counter is
// likely to differ from X, each with the weighted length and validity the official twitter-text
// library (JavaScript, 3.1.0, config version3) gives it. See README.md for how to run it.
//
// Deterministic: a seeded PRNG (mulberry32), so the same library gives the same file.
"use strict";
const fs = require("fs");
const path = require("path");
const twttr = require("twitter-text");

const pkg = require("twitter-text/package.json");
const CONFIG = twttr.configs.version3;
const SEED = 20261130;
const PER_CLASS = 250;

function mulberry32(a) {
  return function () {
    a |= 0; a = (a + 0x6D2B79F5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = mulberry32(SEED);
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const cp = (n) => String.fromCodePoint(n);
const range = (lo, hi) => cp(int(lo, hi));

const RI = () => range(0x1F1E6, 0x1F1FF); // regional indicator
const TAG = () => range(0xE0020, 0xE007E);
const CANCEL_TAG = cp(0xE007F);
const ZWJ = "\u200D";
const VS16 = "\uFE0F";
const TONE = () => range(0x1F3FB, 0x1F3FF);
// Emoji across versions: 1.0 … 15.1 (single code points, and sequences added since 2019).
const EMOJI = [
  "😀", "👍", "❤", "☺", "✈", "⌚", "🚀", "🐍", "🤖", "🧠", "🥰", "🦩", "🧑", "👩", "👨", "🧒", "👶",
  "🥲", "🫀", "🪐", "🫠", "🫶", "🫣", "🩷", "🫨", "🪿", "🫎", "🪼", "🔥", "🩹", "🐦", "⬛", "🍋", "🟩",
  "❤️‍🔥", "❤️‍🩹", "😮‍💨", "😵‍💫", "🐦‍🔥", "🐦‍⬛", "🍋‍🟩", "🧑‍🧑‍🧒", "🧑‍🤝‍🧑", "🫱🏻‍🫲🏿", "👩🏽‍🚀",
  "🏳️‍🌈", "🏴‍☠️", "👨‍👩‍👧‍👦", "🧔‍♂️", "🫃🏾", "🫅🏼", "🤌🏻", "🥷🏿", "🇺🇳", "🇪🇺", "🇯🇵",
  "🏴󠁧󠁢󠁥󠁮󠁧󠁿", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "🏴󠁧󠁢󠁷󠁬󠁳󠁿", "#️⃣", "1️⃣", "*️⃣", "©️", "®️", "™️",
];
const LETTERS = ["a", "Z", "é", "ß", "ж", "ש", "ب", "क", "ก", "ა", "ℓ", "→", "−", "×", "·", "’"];
const CJK = () => pick([range(0x4E00, 0x9FFF), range(0x3040, 0x30FF), range(0xAC00, 0xD7A3), "。", "、"]);
const ASCII = () => pick(["hello", "KV cache", "Day 37", "a", " ", "\n", "1/7", "#LLM", "@user", "x", "."]);
const SCRIPTS = ["ж", "д", "ש", "ב", "ب", "ك", "क", "中", "日", "é", "ü", "α", "ı", "ⅰ", "ａ"];
const TLDS = ["com", "co", "org", "io", "net", "de", "jp", "рф", "中国", "xyz", "ly", "dev", "ai"];

function domainLabel() {
  let s = "";
  const n = int(1, 12);
  for (let i = 0; i < n; i++) s += rand() < 0.6 ? pick("abcdefghijklmnopqrstuvwxyz0123456789-") : pick(SCRIPTS);
  return s;
}

const CLASSES = {
  regional_indicators: () => Array.from({ length: int(1, 5) }, RI).join(pick(["", "", " ", "a"])),
  tag_sequences: () => pick([cp(0x1F3F4), pick(EMOJI), "a", ""]) +
    Array.from({ length: int(0, 6) }, TAG).join("") + (rand() < 0.7 ? CANCEL_TAG : ""),
  zwj_joins: () => Array.from({ length: int(2, 4) }, () => pick([pick(EMOJI), pick(LETTERS), ASCII(), CJK()])).join(ZWJ),
  skin_tones: () => pick([pick(EMOJI), pick(LETTERS), "", " ", CJK()]) + TONE() + (rand() < 0.3 ? TONE() : ""),
  fe0f: () => pick([pick(LETTERS), pick(EMOJI), "©", "®", "™", "1", "#", "→", "↔", "☺", CJK(), " "]) + VS16 + (rand() < 0.3 ? VS16 : ""),
  keycaps: () => pick("0123456789#*a!") + (rand() < 0.5 ? VS16 : "") + "\u20E3",
  mixed_script_domains: () => pick([" ", "", "see ", "x "]) + (rand() < 0.3 ? pick(["http://", "https://"]) : "") +
    domainLabel() + "." + pick(TLDS) + (rand() < 0.3 ? "/" + domainLabel() : ""),
  urls: () => pick(["", "see ", "(", "link: "]) + pick(["http://", "https://", "", "www."]) +
    pick(["example", "github", "t", "arxiv", "a-b", "x1"]) + "." + pick(TLDS) +
    pick(["", "/", "/abs/2309.06180", "/path?q=1&r=2", "/" + "p".repeat(int(1, 80)), ":8080/x"]) + pick(["", ".", ")", " end"]),
  copyright_registered: () => Array.from({ length: int(1, 4) }, () => pick(["©", "®", "™", "℗", "Ⓜ", "‼", "⁉"])).join(pick(["", " "])),
  cjk: () => Array.from({ length: int(1, 40) }, CJK).join(""),
  emoji_all_versions: () => Array.from({ length: int(1, 6) }, () => pick(EMOJI)).join(pick(["", " ", "a"])),
  mixed: () => Array.from({ length: int(1, 30) }, () => pick([
    ASCII, () => pick(EMOJI), CJK, () => pick(LETTERS), RI, TONE, () => VS16, () => ZWJ,
    () => "https://example.com/" + domainLabel(), () => "©", () => "a\u0301",
  ])()).join(""),
};

const vectors = [];
for (const [name, make] of Object.entries(CLASSES)) {
  const seen = new Set();
  let tries = 0;
  while (seen.size < PER_CLASS && tries < PER_CLASS * 20) {
    tries++;
    const text = make();
    if (!text || seen.has(text)) continue;
    seen.add(text);
    const r = twttr.parseTweet(text, CONFIG);
    vectors.push({ class: name, text, weightedLength: r.weightedLength, valid: r.valid });
  }
}

// Every line of an emoji-test.txt given as the first argument (the one twitter-text-parser
// bundles, Emoji 12.0), so that each listed emoji, qualified or not, has the official answer.
const emojiTest = process.argv[2];
if (emojiTest) {
  for (const line of fs.readFileSync(emojiTest, "utf8").split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const text = line.split(";")[0].trim().split(/\s+/).map((h) => cp(parseInt(h, 16))).join("");
    const r = twttr.parseTweet(text, CONFIG);
    vectors.push({ class: "emoji_test_12", text, weightedLength: r.weightedLength, valid: r.valid });
  }
}

const out = {
  generator: "tests/data/twitter-text/generate-vectors.js",
  library: `twitter-text ${pkg.version} (npm), parseTweet with configs.version3`,
  seed: SEED,
  vectors,
};
// One vector per line, so that a regenerated file reviews as a line diff.
const head = JSON.stringify({ ...out, vectors: [] }, null, 1).replace(/\[\]\n\}$/, "[\n");
const body = vectors.map((v) => JSON.stringify(v)).join(",\n");
fs.writeFileSync(path.join(__dirname, "official-vectors.json"), head + body + "\n]}\n");
console.log(`wrote ${vectors.length} vectors with twitter-text ${pkg.version}`);
