// report/svg.cpp: the interactive SVG flame graph, laid out and scripted like flamegraph.pl's.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "report/report.h"
#include "report/utf8.h"

namespace {

// flamegraph.pl's geometry, so the result looks familiar.
constexpr int image_width = 1200;
constexpr int frame_height = 16;
constexpr int font_size = 12;
constexpr double font_width = 0.59; // Verdana's average glyph width, in font sizes
constexpr int x_pad = 10;
constexpr int top_pad = 56;    // title row and controls row
constexpr int bottom_pad = 30; // details row
// Narrower frames are not drawn: they cannot be seen or hovered at this width, and
// they are what would make a profile with many unique stacks a huge, slow file.
constexpr double min_frame_width = 0.1;
// And past this many boxes only the widest are drawn, so no shape of profile makes a file
// much over 4 MB (about 200 bytes a box) or a page too slow to zoom.
constexpr size_t max_boxes = 20000;

// What a box is, for its colour: a named frame takes its kind's (FrameKindRule).
enum class BoxKind : uint8_t { All, Process, Frame, Unnamed, Inlined };

struct Symbol {
	std::string text; // valid UTF-8 without control characters, not yet escaped
	size_t chars = 0; // code points in text, for trimming labels to a box
	BoxKind kind = BoxKind::Frame;
	FrameKind frame = FrameKind::Native; // of a BoxKind::Frame
};

// XML 1.0 allows neither invalid UTF-8 nor most control characters, even escaped, and
// symbol names and comms are arbitrary bytes: replace what XML cannot carry.
Symbol make_symbol(std::string_view label, BoxKind kind, FrameKind frame = FrameKind::Native)
{
	Symbol symbol;
	symbol.kind = kind;
	symbol.frame = frame;
	symbol.text = valid_utf8(label, true, &symbol.chars);
	return symbol;
}

// Everything printed in a box: the label of a frame, or a process, or "all". Frames of
// different addresses with the same label share one symbol and merge into one box.
class SymbolTable {
public:
	uint32_t intern(std::string_view label, BoxKind kind, FrameKind frame = FrameKind::Native)
	{
		std::string key;
		key.reserve(label.size() + 2);
		key += char('0' + int(kind));
		key += char('0' + int(frame));
		key += label;
		auto [it, inserted] = ids_.try_emplace(std::move(key), uint32_t(symbols_.size()));
		if (inserted)
			symbols_.push_back(make_symbol(label, kind, frame));
		return it->second;
	}
	const Symbol &operator[](uint32_t id) const { return symbols_[id]; }
	size_t size() const { return symbols_.size(); }

private:
	std::unordered_map<std::string, uint32_t> ids_;
	std::vector<Symbol> symbols_;
};

void append_escaped(std::string &out, std::string_view text)
{
	for (char c : text) {
		switch (c) {
		case '&': out += "&amp;"; break;
		case '<': out += "&lt;"; break;
		case '>': out += "&gt;"; break;
		case '"': out += "&quot;"; break;
		case '\'': out += "&#39;"; break;
		default: out += c;
		}
	}
}

// The first `chars` code points of valid UTF-8.
std::string_view first_chars(std::string_view text, size_t chars)
{
	size_t i = 0;
	for (size_t seen = 0; i < text.size(); i++) {
		if ((static_cast<unsigned char>(text[i]) & 0xc0) == 0x80)
			continue;
		if (seen++ == chars)
			break;
	}
	return text.substr(0, i);
}

// The symbol's text, escaped, in at most `chars` code points: cut to two fewer and ".."
// when it is longer.
void append_fitted(std::string &out, const Symbol &symbol, size_t chars)
{
	if (symbol.chars <= chars) {
		append_escaped(out, symbol.text);
	} else {
		append_escaped(out, first_chars(symbol.text, chars - 2));
		out += "..";
	}
}

void append_uint(std::string &out, uint64_t value)
{
	char digits[24];
	auto result = std::to_chars(digits, digits + sizeof(digits), value);
	out.append(digits, result.ptr);
}

void append_grouped(std::string &out, uint64_t value)
{
	char digits[24];
	auto result = std::to_chars(digits, digits + sizeof(digits), value);
	const size_t n = size_t(result.ptr - digits);
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && (n - i) % 3 == 0)
			out += ',';
		out += digits[i];
	}
}

// A non-negative number with a fixed count of decimals, without locale or printf cost.
void append_fixed(std::string &out, double value, int decimals)
{
	const uint64_t scale = decimals == 1 ? 10 : 100;
	const auto scaled = uint64_t(std::llround(std::max(value, 0.0) * double(scale)));
	append_uint(out, scaled / scale);
	out += '.';
	const uint64_t fraction = scaled % scale;
	if (decimals == 2 && fraction < 10)
		out += '0';
	append_uint(out, fraction);
}

// FNV-1a: the same name gets the same colour in every run and every file.
uint64_t name_hash(std::string_view text)
{
	uint64_t hash = 0xcbf29ce484222325ull;
	for (char c : text)
		hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
	return hash;
}

void append_fill(std::string &out, const Symbol &symbol)
{
	const uint64_t hash = name_hash(symbol.text);
	const double v1 = double(hash & 0xffff) / 65536, v2 = double(hash >> 16 & 0xffff) / 65536,
		     v3 = double(hash >> 32 & 0xffff) / 65536;
	int r, g, b;
	switch (symbol.kind) {
	case BoxKind::All:
		r = 200, g = 200, b = 215;
		break;
	case BoxKind::Process: // blue: nothing else is, so each process stands out
		r = 100 + int(40 * v1), g = 150 + int(40 * v1), b = 215 + int(40 * v2);
		break;
	case BoxKind::Unnamed:
		r = g = b = 165 + int(45 * v1);
		break;
	case BoxKind::Inlined: // flamegraph.pl's aqua for inlined frames (_[i])
		r = 50 + int(60 * v1), g = b = 165 + int(55 * v1);
		break;
	case BoxKind::Frame:
	default: {
		const FrameKindRule &rule = frame_kind_rule(symbol.frame);
		auto channel = [&](int i, double v) { return rule.base[i] + int(rule.spread[i] * v); };
		// flamegraph.pl's native colours: yellow for C++ (and Rust) names, red for C (the
		// row's). Neither overlaps the kernel's orange, so the two sides read apart.
		if (symbol.frame == FrameKind::Native && symbol.text.find("::") != std::string::npos)
			r = 190 + int(55 * v1), g = r - int(40 * v2), b = 50 + int(20 * v3);
		else if (symbol.frame == FrameKind::Native)
			r = channel(0, v1), g = b = channel(1, v2);
		else
			r = channel(0, v1), g = channel(1, v1), b = channel(2, v1);
		break;
	}
	}
	char text[8];
	std::snprintf(text, sizeof(text), "#%02x%02x%02x", r, g, b);
	out += text;
}

struct Box {
	uint64_t start = 0; // samples left of the box
	uint64_t count = 0; // samples in the box
	uint32_t depth = 0; // 0 for "all", 1 for the process
	uint32_t symbol = 0;
};

struct FlameGraph {
	SymbolTable symbols;
	std::vector<Box> boxes; // "all" first
	uint64_t total = 0;
	uint32_t max_depth = 0;
};

// Keeps the max_boxes widest boxes ("all" aside). Cutting by width keeps the tree whole:
// a box is never narrower than the boxes above it, so none loses its parent.
void limit_boxes(FlameGraph &graph)
{
	if (graph.boxes.size() <= max_boxes + 1)
		return;
	std::vector<uint64_t> counts;
	counts.reserve(graph.boxes.size() - 1);
	for (size_t i = 1; i < graph.boxes.size(); i++)
		counts.push_back(graph.boxes[i].count);
	std::nth_element(counts.begin(), counts.begin() + (max_boxes - 1), counts.end(),
			 std::greater<>());
	uint64_t threshold = counts[max_boxes - 1];
	// Boxes as wide as the cut go together or not at all, or a child could outlive its
	// equally wide parent.
	auto as_wide = [&](uint64_t c) { return c >= threshold; };
	if (size_t(std::count_if(counts.begin(), counts.end(), as_wide)) > max_boxes)
		threshold++;
	graph.max_depth = 0;
	std::erase_if(graph.boxes,
		      [&](const Box &box) { return box.depth > 0 && box.count < threshold; });
	for (const Box &box : graph.boxes)
		graph.max_depth = std::max(graph.max_depth, box.depth);
}

// Merges the stacks into a tree and keeps the boxes wide enough to draw. As in
// flamegraph.pl, sorted stacks make the merge one pass: each stack shares a prefix with
// the one before, and siblings come out ordered by name.
FlameGraph build(const Profile &profile, const ReportOptions &options)
{
	FlameGraph graph;
	const uint32_t no_symbol = UINT32_MAX;
	std::vector<uint32_t> frame_symbols(profile.frames.size(), no_symbol);
	auto frame_symbol = [&](uint32_t index) {
		uint32_t &symbol = frame_symbols[index];
		if (symbol == no_symbol) {
			const Frame &frame = profile.frames[index];
			BoxKind kind = BoxKind::Frame;
			if (!frame.named())
				kind = BoxKind::Unnamed;
			else if (frame.inlined && frame.kind == FrameKind::Native)
				kind = BoxKind::Inlined;
			symbol = graph.symbols.intern(frame_label(frame), kind, frame.kind);
		}
		return symbol;
	};

	// Each stack root first: process, user frames, kernel frames, in one flat array.
	struct Stack {
		size_t begin, size;
		uint64_t count;
	};
	std::vector<Stack> stacks;
	std::vector<uint32_t> path;
	stacks.reserve(profile.samples.size());
	std::string process;
	for (const Sample &sample : profile.samples) {
		if (sample.count == 0)
			continue;
		const size_t begin = path.size();
		process = sample.comm;
		if (options.fold_pid) {
			process += '-' + std::to_string(sample.pid);
			append_container(process, sample);
		}
		path.push_back(graph.symbols.intern(process, BoxKind::Process));
		for (auto it = sample.user.rbegin(); it != sample.user.rend(); ++it)
			path.push_back(frame_symbol(*it));
		for (auto it = sample.kernel.rbegin(); it != sample.kernel.rend(); ++it)
			path.push_back(frame_symbol(*it));
		stacks.push_back({begin, path.size() - begin, sample.count});
		graph.total += sample.count;
	}
	const uint32_t all = graph.symbols.intern("all", BoxKind::All);
	graph.boxes.push_back({0, graph.total, 0, all});
	if (graph.total == 0)
		return graph;

	// Compare stacks by the rank of each symbol's name, computed once.
	std::vector<uint32_t> by_name(graph.symbols.size());
	for (uint32_t i = 0; i < by_name.size(); i++)
		by_name[i] = i;
	std::sort(by_name.begin(), by_name.end(), [&](uint32_t a, uint32_t b) {
		const Symbol &x = graph.symbols[a], &y = graph.symbols[b];
		return x.text != y.text ? x.text < y.text : x.kind < y.kind;
	});
	std::vector<uint32_t> rank(by_name.size());
	for (uint32_t i = 0; i < by_name.size(); i++)
		rank[by_name[i]] = i;
	for (uint32_t &symbol : path)
		symbol = rank[symbol];
	std::sort(stacks.begin(), stacks.end(), [&](const Stack &a, const Stack &b) {
		return std::lexicographical_compare(path.begin() + long(a.begin),
						    path.begin() + long(a.begin + a.size),
						    path.begin() + long(b.begin),
						    path.begin() + long(b.begin + b.size));
	});

	const double px_per_sample = double(image_width - 2 * x_pad) / double(graph.total);
	struct Open {
		uint32_t rank;
		uint64_t start;
	};
	std::vector<Open> open; // open[i] is the box at depth i + 1
	uint64_t x = 0;
	auto close_to = [&](size_t depth) {
		while (open.size() > depth) {
			const Open &box = open.back();
			const uint64_t count = x - box.start;
			if (double(count) * px_per_sample >= min_frame_width) {
				const auto box_depth = uint32_t(open.size());
				graph.boxes.push_back({box.start, count, box_depth, by_name[box.rank]});
				graph.max_depth = std::max(graph.max_depth, box_depth);
			}
			open.pop_back();
		}
	};
	for (const Stack &stack : stacks) {
		const uint32_t *ranks = path.data() + stack.begin;
		size_t common = 0;
		const size_t shared = std::min(open.size(), stack.size);
		while (common < shared && open[common].rank == ranks[common])
			common++;
		close_to(common);
		for (size_t i = common; i < stack.size; i++)
			open.push_back({ranks[i], x});
		x += stack.count;
	}
	close_to(0);
	limit_boxes(graph);
	return graph;
}

// A box's or the graph's count: "12 samples", or off the CPU "1,234 µs off-CPU".
void append_amount(std::string &text, const Profile &profile, uint64_t count)
{
	append_grouped(text, shown_count(profile, count));
	text += profile.off_cpu ? " µs off-CPU" : count == 1 ? " sample" : " samples";
}

std::string title_text(const Profile &profile, uint64_t total)
{
	std::string text = profile.off_cpu ? "Off-CPU Time Flame Graph" : "Flame Graph";
	if (!profile.command.empty()) {
		text += ": ";
		text += profile.command;
	}
	text += " (";
	// Off the CPU nothing is sampled: no rate to give.
	if (profile.off_cpu) {
	} else if (profile.frequency) {
		append_uint(text, profile.frequency);
		text += " Hz, ";
	} else if (profile.period) {
		text += "every ";
		append_grouped(text, profile.period);
		text += " events, ";
	}
	append_fixed(text, profile.duration_s, 2);
	text += " s, ";
	append_amount(text, profile, total);
	text += ')';
	return text;
}

// Hover, click to zoom, search: the same interactions as flamegraph.pl's, written for this
// file's layout. Boxes carry their place in samples (fg:x, fg:w), so zooming compares
// exact integers instead of rounded pixels.
const char script[] = R"JS(
"use strict";
(function (width, xPad, fontSize, fontWidth, textDrop) {
	var script = document.currentScript;
	var svg = script && script.closest ? script.closest("svg") : document.documentElement;
	var NS = "http://www.w3.org/2000/svg";
	var framesEl = svg.querySelector("#frames"), details = svg.querySelector("#details");
	var unzoomEl = svg.querySelector("#unzoom"), searchEl = svg.querySelector("#search");
	var matchedEl = svg.querySelector("#matched");
	var nodes = [], total = 0, searchRe = null;
	for (var i = 0; i < framesEl.children.length; i++) {
		var g = framesEl.children[i], title = g.firstElementChild;
		var rect = title.nextElementSibling;
		var info = title.textContent;
		var node = {
			g: g, rect: rect, text: rect.nextElementSibling, info: info,
			name: info.slice(0, info.lastIndexOf(" (")),
			x: +rect.getAttribute("fg:x"), w: +rect.getAttribute("fg:w"),
			y: +rect.getAttribute("y"), fill: rect.getAttribute("fill")
		};
		g.fgIndex = nodes.length;
		nodes.push(node);
		total = Math.max(total, node.w);
	}

	function label(n, px, pw) {
		var chars = Math.floor(pw / (fontSize * fontWidth));
		var s = chars < 3 ? "" : n.name.length <= chars ? n.name
					 : n.name.slice(0, chars - 2) + "..";
		if (!n.text) {
			if (!s)
				return;
			n.text = document.createElementNS(NS, "text");
			n.text.setAttribute("y", n.y + textDrop);
			n.g.appendChild(n.text);
		}
		n.text.setAttribute("x", (px + 3).toFixed(1));
		n.text.textContent = s;
	}
	function place(n, px, pw) {
		n.rect.setAttribute("x", px.toFixed(1));
		n.rect.setAttribute("width", pw.toFixed(1));
		label(n, px, pw);
	}
	function unzoom() {
		var scale = total ? (width - 2 * xPad) / total : 0;
		nodes.forEach(function (n) {
			n.g.classList.remove("hide", "parent");
			place(n, xPad + n.x * scale, n.w * scale);
		});
		unzoomEl.classList.add("hide");
	}
	// Keeps the box's descendants, stretched to the full width, and its ancestors, faded.
	function zoom(z) {
		if (z === nodes[0])
			return unzoom();
		var scale = (width - 2 * xPad) / z.w;
		nodes.forEach(function (n) {
			n.g.classList.remove("hide", "parent");
			if (n.y > z.y) {
				if (n.x <= z.x && n.x + n.w >= z.x + z.w) {
					n.g.classList.add("parent");
					place(n, xPad, width - 2 * xPad);
				} else {
					n.g.classList.add("hide");
				}
			} else if (n.x >= z.x && n.x + n.w <= z.x + z.w) {
				place(n, xPad + (n.x - z.x) * scale, n.w * scale);
			} else {
				n.g.classList.add("hide");
			}
		});
		unzoomEl.classList.remove("hide");
	}
	// Colours the boxes whose name matches and says what share of all samples they cover;
	// a box inside another matching box is counted once.
	function search(term) {
		var re;
		try {
			re = new RegExp(term);
		} catch (e) {
			matchedEl.textContent = "Invalid regular expression";
			return -1;
		}
		searchRe = re;
		var widest = {};
		nodes.forEach(function (n) {
			if (re.test(n.name)) {
				n.rect.setAttribute("fill", "#e600e6");
				if (!(n.x in widest) || widest[n.x] < n.w)
					widest[n.x] = n.w;
			} else {
				n.rect.setAttribute("fill", n.fill);
			}
		});
		var starts = Object.keys(widest).map(Number).sort(function (a, b) { return a - b; });
		var covered = 0, end = 0;
		starts.forEach(function (s) {
			var e = s + widest[s];
			if (e > end) {
				covered += e - Math.max(s, end);
				end = e;
			}
		});
		var percent = total ? 100 * covered / total : 0;
		matchedEl.textContent = "Matched: " + percent.toFixed(2) + "%";
		searchEl.textContent = "Reset Search";
		return percent;
	}
	function resetSearch() {
		searchRe = null;
		nodes.forEach(function (n) { n.rect.setAttribute("fill", n.fill); });
		matchedEl.textContent = "";
		searchEl.textContent = "Search";
	}
	function askSearch() {
		var term = window.prompt("Search frames (regular expression):",
					 searchRe ? searchRe.source : "");
		if (term)
			search(term);
	}

	function nodeOf(event) {
		var g = event.target.closest ? event.target.closest("g") : null;
		return g && g.parentNode === framesEl ? nodes[g.fgIndex] : null;
	}
	framesEl.addEventListener("click", function (event) {
		var n = nodeOf(event);
		if (n)
			zoom(n);
	});
	framesEl.addEventListener("mouseover", function (event) {
		var n = nodeOf(event);
		if (n)
			details.textContent = "Function: " + n.info;
	});
	framesEl.addEventListener("mouseout", function () { details.textContent = " "; });
	unzoomEl.addEventListener("click", unzoom);
	searchEl.addEventListener("click", function () {
		if (searchRe)
			resetSearch();
		else
			askSearch();
	});
	window.addEventListener("keydown", function (event) {
		if ((event.ctrlKey || event.metaKey) && event.key === "f") {
			event.preventDefault();
			askSearch();
		} else if (event.key === "Escape") {
			unzoom();
			resetSearch();
		}
	});
	try {
		var term = new URLSearchParams(window.location.search).get("s");
		if (term)
			search(term);
	} catch (e) {
	}
	window.flamegraph = {
		nodes: nodes, zoom: function (i) { zoom(nodes[i]); }, unzoom: unzoom,
		search: search, resetSearch: resetSearch
	};
})()JS";

const char style[] = R"CSS(
text { font-family: Verdana, sans-serif; font-size: 12px; fill: #000; }
#title { font-size: 17px; }
#search, #matched { text-anchor: end; }
#unzoom, #search, #frames g { cursor: pointer; }
#frames rect { rx: 2px; ry: 2px; }
#frames g:hover rect { stroke: #000; stroke-width: 0.5; }
.hide { display: none; }
.parent { opacity: 0.5; }
)CSS";

} // namespace

void write_svg(std::ostream &out, const Profile &profile, const ReportOptions &options)
{
	const FlameGraph graph = build(profile, options);
	const int rows = int(graph.max_depth) + 1;
	const int height = top_pad + rows * frame_height + bottom_pad + (graph.total ? 0 : 40);
	const double px_per_sample =
		graph.total ? double(image_width - 2 * x_pad) / double(graph.total) : 0;
	const double char_width = font_size * font_width;
	const int text_drop = 12; // baseline below a box's top edge

	std::string svg;
	// Measured: a box with its label averages ~200 bytes; reserving avoids regrowth.
	svg.reserve(8192 + graph.boxes.size() * 200);
	svg += "<?xml version=\"1.0\" standalone=\"no\"?>\n"
	       "<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" "
	       "xmlns:fg=\"http://github.com/jonhoo/inferno\" width=\"";
	append_uint(svg, image_width);
	svg += "\" height=\"";
	append_uint(svg, uint64_t(height));
	svg += "\" viewBox=\"0 0 ";
	append_uint(svg, image_width);
	svg += ' ';
	append_uint(svg, uint64_t(height));
	svg += "\">\n<!-- Flame graph written by profile. Click a box to zoom, Ctrl-F to search. -->\n";
	svg += "<style>";
	svg += style;
	svg += "</style>\n<defs><linearGradient id=\"background\" x1=\"0\" y1=\"0\" x2=\"0\" y2=\"1\">"
	       "<stop stop-color=\"#eeeeee\" offset=\"5%\"/><stop stop-color=\"#eeeeb0\" "
	       "offset=\"95%\"/></linearGradient></defs>\n<rect x=\"0\" y=\"0\" width=\"100%\" "
	       "height=\"100%\" fill=\"url(#background)\"/>\n";

	// The title line: trimmed to fit, whole in its tooltip.
	const std::string title = title_text(profile, graph.total);
	const Symbol title_symbol = make_symbol(title, BoxKind::All);
	const auto title_chars = size_t((image_width - 2 * x_pad) / (17 * font_width));
	svg += "<text id=\"title\" x=\"";
	append_uint(svg, image_width / 2);
	svg += "\" y=\"24\" text-anchor=\"middle\"><title>";
	append_escaped(svg, title_symbol.text);
	svg += "</title>";
	append_fitted(svg, title_symbol, title_chars);
	svg += "</text>\n<text id=\"unzoom\" class=\"hide\" x=\"";
	append_uint(svg, x_pad);
	svg += "\" y=\"46\">Reset Zoom</text>\n<text id=\"search\" x=\"";
	append_uint(svg, image_width - x_pad);
	svg += "\" y=\"46\">Search</text>\n<text id=\"details\" x=\"";
	append_uint(svg, x_pad);
	svg += "\" y=\"";
	append_uint(svg, uint64_t(height - 12));
	svg += "\"> </text>\n<text id=\"matched\" x=\"";
	append_uint(svg, image_width - x_pad);
	svg += "\" y=\"";
	append_uint(svg, uint64_t(height - 12));
	svg += "\"></text>\n";
	if (graph.total == 0) {
		svg += "<text x=\"";
		append_uint(svg, image_width / 2);
		svg += "\" y=\"";
		append_uint(svg, top_pad + 30);
		svg += profile.off_cpu ? "\" text-anchor=\"middle\">No time off the CPU was counted.</text>\n"
				       : "\" text-anchor=\"middle\">No samples were collected.</text>\n";
	}

	svg += "<g id=\"frames\">\n";
	const int bottom = height - bottom_pad;
	for (size_t i = 0; graph.total && i < graph.boxes.size(); i++) {
		const Box &box = graph.boxes[i];
		const Symbol &symbol = graph.symbols[box.symbol];
		const double x = x_pad + double(box.start) * px_per_sample;
		const double width = double(box.count) * px_per_sample;
		const auto y = uint64_t(bottom - int(box.depth + 1) * frame_height);
		svg += "<g><title>";
		append_escaped(svg, symbol.text);
		svg += " (";
		append_amount(svg, profile, box.count);
		svg += ", ";
		append_fixed(svg, 100.0 * double(box.count) / double(graph.total), 2);
		// After the counts, where the script's name of the box (up to " (") leaves it.
		svg += symbol.kind == BoxKind::Inlined ? "%, inlined)</title><rect x=\"" : "%)</title><rect x=\"";
		append_fixed(svg, x, 1);
		svg += "\" y=\"";
		append_uint(svg, y);
		svg += "\" width=\"";
		append_fixed(svg, width, 1);
		svg += "\" height=\"";
		append_uint(svg, frame_height - 1);
		svg += "\" fill=\"";
		append_fill(svg, symbol);
		svg += "\" fg:x=\"";
		append_uint(svg, box.start);
		svg += "\" fg:w=\"";
		append_uint(svg, box.count);
		svg += "\"/>";
		// Boxes too narrow for three characters get no text; the script adds it on zoom.
		const auto chars = size_t(width / char_width);
		if (chars >= 3) {
			svg += "<text x=\"";
			append_fixed(svg, x + 3, 1);
			svg += "\" y=\"";
			append_uint(svg, y + text_drop);
			svg += "\">";
			append_fitted(svg, symbol, chars);
			svg += "</text>";
		}
		svg += "</g>\n";
	}
	svg += "</g>\n<script type=\"text/ecmascript\"><![CDATA[";
	svg += script;
	append_uint(svg, image_width);
	svg += ", ";
	append_uint(svg, x_pad);
	svg += ", ";
	append_uint(svg, font_size);
	svg += ", ";
	append_fixed(svg, font_width, 2);
	svg += ", ";
	append_uint(svg, text_drop);
	svg += ");\n]]></script>\n</svg>\n";
	out.write(svg.data(), std::streamsize(svg.size()));
}
