// tests/test_report_svg.cpp: the flame graph, checked as XML, as a picture, and as a program.
#include <doctest/doctest.h>

#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <regex>
#include <sstream>

#include "report/report.h"
#include "tests/support.h"
#include "tests/test_report_data.h"

namespace {

std::string render(const Profile &profile, ReportOptions options = {})
{
	std::ostringstream out;
	write_svg(out, profile, options);
	return out.str();
}

std::string unescape(std::string text)
{
	static const std::pair<const char *, const char *> entities[] = {
		{"&lt;", "<"}, {"&gt;", ">"}, {"&quot;", "\""}, {"&#39;", "'"}, {"&amp;", "&"}};
	for (auto [entity, plain] : entities)
		for (size_t at; (at = text.find(entity)) != std::string::npos;)
			text.replace(at, std::strlen(entity), plain);
	return text;
}

struct Box {
	std::string name; // unescaped, as the tooltip shows it
	uint64_t samples = 0;
	double percent = 0, x = 0, width = 0;
	int y = 0;
	std::string fill;
	uint64_t fg_x = 0, fg_w = 0;
	bool has_text = false;
	std::string text;
	bool inlined = false; // the tooltip ends "..., inlined)"
};

// The boxes, one per line as write_svg puts them.
std::vector<Box> parse_boxes(const std::string &svg)
{
	static const std::regex line(
		R"re(<g><title>(.*) \(([0-9,]+) samples?, ([0-9.]+)%(, inlined)?\)</title><rect x="([0-9.]+)" y="([0-9]+)" )re"
		R"re(width="([0-9.]+)" height="15" fill="(#[0-9a-f]{6})" fg:x="([0-9]+)" fg:w="([0-9]+)"/>)re"
		R"re((<text x="[0-9.]+" y="[0-9]+">(.*)</text>)?</g>)re");
	std::vector<Box> boxes;
	for (const std::string &text : split_lines(svg)) {
		if (!text.starts_with("<g><title>"))
			continue;
		std::smatch m;
		REQUIRE_MESSAGE(std::regex_match(text, m, line), "unexpected box: " << text);
		Box box;
		box.name = unescape(m[1]);
		std::string samples = m[2];
		std::erase(samples, ',');
		box.samples = std::stoull(samples);
		box.percent = std::stod(m[3]);
		box.inlined = m[4].matched;
		box.x = std::stod(m[5]);
		box.y = std::stoi(m[6]);
		box.width = std::stod(m[7]);
		box.fill = m[8];
		box.fg_x = std::stoull(m[9]);
		box.fg_w = std::stoull(m[10]);
		box.has_text = m[11].matched;
		box.text = unescape(m[12]);
		boxes.push_back(box);
	}
	return boxes;
}

const Box &find_box(const std::vector<Box> &boxes, const std::string &name)
{
	const Box *found = nullptr;
	for (const Box &box : boxes) {
		if (box.name == name) {
			REQUIRE_MESSAGE(!found, "two boxes named " << name);
			found = &box;
		}
	}
	REQUIRE_MESSAGE(found, "no box named " << name);
	return *found;
}

bool has_box(const std::vector<Box> &boxes, const std::string &name)
{
	for (const Box &box : boxes)
		if (box.name == name)
			return true;
	return false;
}

struct Rgb {
	int r, g, b;
};

Rgb rgb(const std::string &fill)
{
	unsigned r = 0, g = 0, b = 0;
	std::sscanf(fill.c_str(), "#%02x%02x%02x", &r, &g, &b);
	return {int(r), int(g), int(b)};
}

const std::string push_back_name = "std::vector<int, std::allocator<int> >::push_back(int const&)";
const std::string format_name = "fmt::format<'x', \"y\">(std::string&&) & <&>";

std::string tool_or_fail(const std::string &name, const std::string &package)
{
	const std::string path = find_tool(name);
	REQUIRE_MESSAGE(!path.empty(), name << " is not installed (apt-get install " << package
					  << "); CI installs it, so this test fails rather than skips");
	return path;
}

CommandResult xmllint(const std::string &file)
{
	return run_command({tool_or_fail("xmllint", "libxml2-utils"), "--noout", file});
}

// Headless Chromium on a local file, with nothing that reaches the network.
CommandResult chromium(const std::string &file, const std::vector<std::string> &action,
		       const TempDir &dir)
{
	std::vector<std::string> argv = {tool_or_fail("chromium", "chromium"),
					 "--headless",
					 "--no-sandbox",
					 "--disable-gpu",
					 "--disable-dev-shm-usage",
					 "--disable-quic",
					 "--no-first-run",
					 "--disable-background-networking",
					 "--disable-component-update",
					 "--disable-sync",
					 "--user-data-dir=" + (dir / "chromium-profile"),
					 "--window-size=1200,800"};
	argv.insert(argv.end(), action.begin(), action.end());
	argv.push_back("file://" + file);
	return run_command(argv, 120);
}

struct Image {
	uint32_t width = 0, height = 0;
	std::vector<uint8_t> rgba; // 4 bytes a pixel
};

uint32_t big_endian(const std::string &data, size_t at)
{
	auto byte = [&](size_t i) { return uint32_t(static_cast<unsigned char>(data[at + i])); };
	return byte(0) << 24 | byte(1) << 16 | byte(2) << 8 | byte(3);
}

// Enough of PNG for Chromium's screenshots: 8-bit RGB or RGBA, not interlaced.
bool decode_png(const std::string &png, Image &image, std::string &error)
{
	if (png.size() < 8 || png.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0)
		return error = "not a PNG", false;
	std::string compressed;
	int channels = 0;
	for (size_t at = 8; at + 12 <= png.size();) {
		const uint32_t length = big_endian(png, at);
		const std::string type = png.substr(at + 4, 4);
		if (at + 12 + length > png.size())
			return error = "truncated chunk", false;
		const std::string body = png.substr(at + 8, length);
		if (type == "IHDR") {
			image.width = big_endian(body, 0);
			image.height = big_endian(body, 4);
			const int depth = body[8], colour = body[9], interlace = body[12];
			if (depth != 8 || (colour != 2 && colour != 6) || interlace != 0)
				return error = "unsupported PNG layout", false;
			channels = colour == 6 ? 4 : 3;
		} else if (type == "IDAT") {
			compressed += body;
		}
		at += 12 + length;
	}
	if (!channels)
		return error = "no IHDR", false;
	const size_t stride = size_t(image.width) * size_t(channels);
	std::vector<uint8_t> raw((stride + 1) * image.height);
	uLongf raw_size = raw.size();
	if (uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef *>(compressed.data()),
		       compressed.size()) != Z_OK ||
	    raw_size != raw.size())
		return error = "bad image data", false;
	// Undo each row's filter (PNG spec, section 9).
	std::vector<uint8_t> pixels(stride * image.height), zero(stride, 0);
	for (uint32_t row = 0; row < image.height; row++) {
		const uint8_t filter = raw[row * (stride + 1)];
		const uint8_t *in = &raw[row * (stride + 1) + 1];
		uint8_t *out = &pixels[row * stride];
		const uint8_t *up = row ? &pixels[(row - 1) * stride] : zero.data();
		for (size_t i = 0; i < stride; i++) {
			const int a = i >= size_t(channels) ? out[i - channels] : 0, b = up[i],
				  c = i >= size_t(channels) ? up[i - channels] : 0;
			int predicted = 0;
			switch (filter) {
			case 0: predicted = 0; break;
			case 1: predicted = a; break;
			case 2: predicted = b; break;
			case 3: predicted = (a + b) / 2; break;
			case 4: {
				const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b),
					  pc = std::abs(p - c);
				predicted = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
				break;
			}
			default: return error = "bad filter", false;
			}
			out[i] = uint8_t(in[i] + predicted);
		}
	}
	image.rgba.resize(size_t(image.width) * image.height * 4);
	for (size_t p = 0; p < size_t(image.width) * image.height; p++) {
		for (int ch = 0; ch < 3; ch++)
			image.rgba[p * 4 + ch] = pixels[p * channels + ch];
		image.rgba[p * 4 + 3] = channels == 4 ? pixels[p * channels + 3] : 255;
	}
	return true;
}

// Runs inside Chromium after the flame graph's own script: hovers, clicks, resets and
// searches the way a user would, and leaves what it saw in data-test on the root element.
const char interaction_script[] = R"JS(
(function () {
	var out = [];
	function say(key, value) { out.push(key + "=" + value); }
	try {
		var fg = window.flamegraph;
		var doc = document;
		function find(prefix) {
			return fg.nodes.filter(function (n) { return n.name.indexOf(prefix) === 0; })[0];
		}
		function fire(node, type) {
			node.rect.dispatchEvent(new MouseEvent(type, {bubbles: true, view: window}));
		}
		var main = find("main"), push = find("std::vector<int"), clear = find("clear_page_erms");
		var fmt = find("fmt::format"), opnew = find("operator new");
		var details = doc.querySelector("#details"), unzoom = doc.querySelector("#unzoom");
		fire(push, "mouseover");
		say("hover", details.textContent.indexOf("Function: std::vector<int") === 0 &&
			     details.textContent.indexOf("(401 samples, 40.10%)") > 0);
		fire(push, "mouseout");
		var inlined = find("inline_helper");
		fire(inlined, "mouseover");
		say("inlined_name", inlined.name);
		say("inlined_hover", details.textContent);
		fire(inlined, "mouseout");
		fire(push, "click");
		say("zoom_width", push.rect.getAttribute("width"));
		say("zoom_child", clear.rect.getAttribute("width"));
		say("sibling_hidden", fmt.g.classList.contains("hide"));
		say("parent_faded", main.g.classList.contains("parent") && main.rect.getAttribute("width") === "1180.0");
		say("unzoom_shown", !unzoom.classList.contains("hide"));
		fire(opnew, "click");
		say("narrow_gets_text", !!opnew.text && opnew.text.textContent.indexOf("operator new") === 0);
		unzoom.dispatchEvent(new MouseEvent("click", {bubbles: true, view: window}));
		say("reset_width", push.rect.getAttribute("width"));
		say("reset_hidden", doc.querySelectorAll("#frames .hide").length);
		say("unzoom_hidden", unzoom.classList.contains("hide"));
		say("search", fg.search("^std::vector|^operator new|clear_page"));
		say("matched", doc.querySelector("#matched").textContent);
		say("highlighted", push.rect.getAttribute("fill") + "," + main.rect.getAttribute("fill"));
		say("bad_regex", fg.search("(("));
		fg.resetSearch();
		say("search_reset", push.rect.getAttribute("fill") === push.fill && doc.querySelector("#matched").textContent === "");
	} catch (e) {
		say("exception", e);
	}
	say("errors", (window.testErrors || []).join(";") || "none");
	document.documentElement.setAttribute("data-test", out.join("|"));
})();
)JS";

// The data-test attribute Chromium dumped, split into key=value.
std::map<std::string, std::string> interaction_results(const std::string &dom)
{
	std::map<std::string, std::string> results;
	const size_t start = dom.find("data-test=\"");
	if (start == std::string::npos)
		return results;
	const size_t end = dom.find('"', start + 11);
	std::stringstream items(unescape(dom.substr(start + 11, end - start - 11)));
	for (std::string item; std::getline(items, item, '|');) {
		const size_t eq = item.find('=');
		results[item.substr(0, eq)] = item.substr(eq + 1);
	}
	return results;
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("svg: one box per merged frame, widths in proportion to samples, root at the bottom")
{
	const std::vector<Box> boxes = parse_boxes(render(tricky_profile()));
	const Box &all = find_box(boxes, "all");
	CHECK(all.samples == 1000);
	CHECK(all.fg_w == 1000);
	CHECK(all.x == doctest::Approx(10.0));
	CHECK(all.width == doctest::Approx(1180.0));
	for (const Box &box : boxes) {
		CAPTURE(box.name);
		CHECK(box.samples == box.fg_w);
		// Pixels are written with one decimal.
		CHECK(std::abs(box.width - box.fg_w * 1.18) <= 0.051);
		CHECK(std::abs(box.x - (10 + box.fg_x * 1.18)) <= 0.051);
		CHECK(box.percent == doctest::Approx(box.samples / 10.0));
		CHECK(box.y <= all.y);
	}
	// push_back's two stacks merged into one box: 400 through the kernel and 1 to operator new.
	const Box &push = find_box(boxes, push_back_name);
	CHECK(push.samples == 401);
	CHECK(find_box(boxes, "main").samples == 851);
	CHECK(find_box(boxes, "app").samples == 851);
	CHECK(find_box(boxes, "x<y>&z").samples == 149);
	// Root first: process, user frames from main up, then kernel frames from the entry up.
	const char *chain[] = {"all", "app", "main", push_back_name.c_str(),
			       "entry_SYSCALL_64_after_hwframe", "do_syscall_64", "clear_page_erms"};
	for (size_t i = 1; i < std::size(chain); i++) {
		const Box &parent = find_box(boxes, chain[i - 1]), &child = find_box(boxes, chain[i]);
		CAPTURE(chain[i]);
		CHECK(child.y == parent.y - 16);
		CHECK(child.fg_x >= parent.fg_x);
		CHECK(child.fg_x + child.fg_w <= parent.fg_x + parent.fg_w);
	}
	CHECK(find_box(boxes, "operator new(unsigned long)").y == push.y - 16);
	// The inlined function is a frame of its own above its caller.
	CHECK(find_box(boxes, "inline_helper(Foo<Bar>&)").y == find_box(boxes, "caller_of_inline()").y - 16);
}

TEST_CASE("svg: siblings are ordered by name, as flamegraph.pl orders them")
{
	const std::vector<Box> boxes = parse_boxes(render(tricky_profile()));
	const Box &caller = find_box(boxes, "caller_of_inline()");
	const Box &format = find_box(boxes, format_name);
	const Box &push = find_box(boxes, push_back_name);
	CHECK(caller.fg_x == 0);
	CHECK(format.fg_x == caller.fg_x + caller.fg_w);
	CHECK(push.fg_x == format.fg_x + format.fg_w);
	CHECK(find_box(boxes, "app").fg_x < find_box(boxes, "x<y>&z").fg_x);
}

TEST_CASE("svg: names are escaped and the file is well-formed XML")
{
	Profile profile = tricky_profile();
	profile.frames[1].name = "cdata]]>end --> <!-- & \"quoted\" 'single'";
	const std::string svg = render(profile);
	CHECK(svg.find("std::vector&lt;int, std::allocator&lt;int&gt; &gt;::push_back(int const&amp;)") !=
	      std::string::npos);
	CHECK(svg.find("fmt::format&lt;&#39;x&#39;, &quot;y&quot;&gt;") != std::string::npos);
	CHECK(svg.find("cdata]]&gt;end --&gt; &lt;!-- &amp; &quot;quoted&quot; &#39;single&#39;") !=
	      std::string::npos);
	CHECK(svg.find("Foo<Bar>") == std::string::npos);
	CHECK(svg.find("x<y>") == std::string::npos);
	// Bytes that are not UTF-8 become U+FFFD, a control character a space.
	CHECK(svg.find("bad\xef\xbf\xbd\xef\xbf\xbd utf8 name") != std::string::npos);
	CHECK(svg.find('\x01') == std::string::npos);

	TempDir dir;
	write_file(dir / "tricky.svg", svg);
	const CommandResult lint = xmllint(dir / "tricky.svg");
	CHECK_MESSAGE(lint.status == 0, lint.err);
	CHECK(lint.err == "");
}

TEST_CASE("svg: the title line gives the command, rate, duration and total samples")
{
	Profile profile = tricky_profile();
	std::string svg = render(profile);
	CHECK(svg.find(">Flame Graph: profile -p 100 -o &#39;a&lt;b&gt;&amp;c.svg&#39; 2 (49 Hz, 2.50 s, "
		       "1,000 samples)</text>") != std::string::npos);
	profile.frequency = 0;
	profile.period = 1000000;
	profile.command = std::string(300, 'c');
	svg = render(profile);
	CHECK(svg.find("(every 1,000,000 events, 2.50 s, 1,000 samples)</title>") != std::string::npos);
	// Too long for the picture: trimmed, whole in the tooltip.
	CHECK(svg.find(std::string(100, 'c') + "..</text>") != std::string::npos);
}

TEST_CASE("svg: off the CPU, the title and each box give time, in microseconds off the CPU")
{
	Profile profile = tricky_profile();
	profile.off_cpu = true;
	for (Sample &sample : profile.samples)
		sample.count *= 1000; // nanoseconds: 1,000,000 in all, a microsecond a sample before
	const std::string svg = render(profile);
	// Nothing was sampled: the title gives no rate, though the options had one.
	CHECK(svg.find(">Off-CPU Time Flame Graph: profile -p 100 -o &#39;a&lt;b&gt;&amp;c.svg&#39; 2 (2.50 s, "
		       "1,000 µs off-CPU)</text>") != std::string::npos);
	CHECK(svg.find(" Hz") == std::string::npos);
	CHECK(svg.find("<title>all (1,000 µs off-CPU, 100.00%)</title>") != std::string::npos);
	for (const char *samples : {" sample,", " samples,", " sample)", " samples)"})
		CHECK(svg.find(samples) == std::string::npos);
}

TEST_CASE("svg: kernel, user, inlined, unnamed and process boxes are coloured apart, the same every run")
{
	const std::vector<Box> boxes = parse_boxes(render(tricky_profile()));
	for (const char *name : {"clear_page_erms", "do_syscall_64", "entry_SYSCALL_64_after_hwframe"}) {
		const Rgb c = rgb(find_box(boxes, name).fill);
		CAPTURE(name);
		CHECK(c.b == 0); // orange: red, green 100 below it, no blue
		CHECK(c.r - c.g == 100);
	}
	for (const std::string &name : {push_back_name, format_name}) { // C++: yellow
		const Rgb c = rgb(find_box(boxes, name).fill);
		CAPTURE(name);
		CHECK(c.r >= 190);
		CHECK(c.r - c.g <= 40);
		CHECK(c.b <= 70);
	}
	for (const char *name : {"main", "caller_of_inline()", "operator new(unsigned long)"}) { // C: red
		const Rgb c = rgb(find_box(boxes, name).fill);
		CAPTURE(name);
		CHECK(c.r >= 200);
		CHECK(c.g == c.b);
		CHECK(c.r - c.g >= 70);
	}
	{ // inlined: flamegraph.pl's aqua, which no other kind of box is
		const Box &inlined = find_box(boxes, "inline_helper(Foo<Bar>&)");
		const Rgb c = rgb(inlined.fill);
		CHECK(inlined.inlined);
		CHECK(c.r <= 110);
		CHECK(c.g == c.b);
		CHECK(c.g >= 165);
		for (const Box &box : boxes)
			CHECK_MESSAGE(box.inlined == (box.name == "inline_helper(Foo<Bar>&)"), box.name);
	}
	for (const Box &box : boxes) {
		if (box.name == "[unknown]" || box.name == "[libc.so.6+0x29d90]") {
			const Rgb c = rgb(box.fill);
			CHECK(c.r == c.g);
			CHECK(c.g == c.b);
		}
	}
	for (const char *name : {"app", "x<y>&z"}) {
		const Rgb c = rgb(find_box(boxes, name).fill);
		CHECK(c.b > c.r + 50);
	}
	// A name's colour depends on the name only: another profile, same colour.
	Profile other;
	for (const std::string &name : {push_back_name, std::string("another_parent")}) {
		Frame f;
		f.name = name;
		other.frames.push_back(f);
	}
	other.samples.push_back({7, "other", {}, {0, 1}, 3});
	const std::vector<Box> other_boxes = parse_boxes(render(other));
	CHECK(find_box(other_boxes, push_back_name).fill == find_box(boxes, push_back_name).fill);
	// And the whole file is the same from run to run.
	CHECK(render(tricky_profile()) == render(tricky_profile()));
}

TEST_CASE("svg: boxes under 0.1 px are left out, their samples stay in their parents")
{
	Profile profile;
	profile.frequency = 49;
	for (const char *name : {"main", "hot", "rare"}) {
		Frame f;
		f.name = name;
		profile.frames.push_back(f);
	}
	profile.samples.push_back({1, "app", {}, {1, 0}, 1000000});
	profile.samples.push_back({1, "app", {}, {2, 0}, 50}); // 0.059 px at 1,000,050 samples
	const std::vector<Box> boxes = parse_boxes(render(profile));
	CHECK(!has_box(boxes, "rare"));
	CHECK(find_box(boxes, "hot").samples == 1000000);
	CHECK(find_box(boxes, "main").samples == 1000050);
	CHECK(find_box(boxes, "all").samples == 1000050);
	// One more sample makes it 0.1 px: drawn, without a label.
	profile.samples[1].count = 85;
	const std::vector<Box> boxes_after = parse_boxes(render(profile));
	const Box &rare = find_box(boxes_after, "rare");
	CHECK(rare.width == doctest::Approx(0.1));
	CHECK(!rare.has_text);
}

TEST_CASE("svg: past 20,000 boxes only the widest are drawn, and every box keeps its parent")
{
	// 5,000 stacks of 10 frames of their own, of 1 to 4 samples: 37,500 boxes of 0.1 px
	// or more (2 samples and up), 12,500 of them of 4 samples.
	Profile profile;
	profile.frequency = 49;
	for (int s = 0; s < 5000; s++) {
		Sample sample{1, "app", {}, {}, uint64_t(1 + s % 4)};
		for (int depth = 0; depth < 10; depth++) {
			Frame f;
			f.name = "f" + std::to_string(s) + "_" + std::to_string(depth);
			profile.frames.push_back(f);
			sample.user.insert(sample.user.begin(), uint32_t(profile.frames.size() - 1));
		}
		profile.samples.push_back(sample);
	}
	// And a hot stack of 5,000 samples that must stay.
	Frame hot;
	hot.name = "hot";
	profile.frames.push_back(hot);
	profile.samples.push_back({1, "app", {}, {uint32_t(profile.frames.size() - 1)}, 5000});

	const std::vector<Box> boxes = parse_boxes(render(profile));
	CHECK(boxes.size() <= 20001);
	CHECK(boxes.size() >= 12500);
	CHECK(find_box(boxes, "all").samples == 17500);
	CHECK(find_box(boxes, "app").samples == 17500);
	CHECK(find_box(boxes, "hot").samples == 5000);
	CHECK(find_box(boxes, "f3_9").samples == 4); // the widest stay, up to their leaves
	CHECK(!has_box(boxes, "f2_0"));		  // 3 samples: as wide as too many others
	for (const Box &box : boxes) {
		if (box.name == "all")
			continue;
		CAPTURE(box.name);
		const bool has_parent = std::any_of(boxes.begin(), boxes.end(), [&](const Box &p) {
			return p.y == box.y + 16 && p.fg_x <= box.fg_x && p.fg_x + p.fg_w >= box.fg_x + box.fg_w;
		});
		CHECK(has_parent);
	}
}

TEST_CASE("svg: labels are trimmed to their box with .., and left out under three characters")
{
	const std::vector<Box> boxes = parse_boxes(render(tricky_profile()));
	const Box &libc = find_box(boxes, "[libc.so.6+0x29d90]"); // 118 px: 16 characters fit
	CHECK(libc.text == "[libc.so.6+0x2..");
	CHECK(find_box(boxes, "main").text == "main");
	CHECK(!find_box(boxes, "operator new(unsigned long)").has_text); // 1.2 px
}

TEST_CASE("svg: -E names each process comm-PID, and its container")
{
	ReportOptions options;
	options.fold_pid = true;
	const std::vector<Box> boxes = parse_boxes(render(tricky_profile(), options));
	CHECK(find_box(boxes, "app-100").samples == 851);
	CHECK(find_box(boxes, "x<y>&z-200").samples == 149);

	// A process in a container: comm-PID@ and 12 characters of its id, as folded -E.
	Profile in_container = tricky_profile();
	for (Sample &sample : in_container.samples)
		if (sample.pid == 100)
			sample.container = "9ec39b91f3d70e1beff50a308f77067065ea6be0d91a3378375056cd4422cf3d";
	const std::vector<Box> labelled = parse_boxes(render(in_container, options));
	CHECK(find_box(labelled, "app-100@9ec39b91f3d7").samples == 851);
	CHECK(find_box(labelled, "x<y>&z-200").samples == 149);
}

TEST_CASE("svg: an empty profile still makes a valid picture that says so")
{
	Profile profile;
	profile.frequency = 49;
	const std::string svg = render(profile);
	CHECK(svg.find("No samples were collected.") != std::string::npos);
	CHECK(svg.find("0 samples)") != std::string::npos);
	TempDir dir;
	write_file(dir / "empty.svg", svg);
	const CommandResult lint = xmllint(dir / "empty.svg");
	CHECK_MESSAGE(lint.status == 0, lint.err);
}

// With BENCH_SVG=1, scripts/bench-svg.sh's measurement (on an optimized build): the best
// of three renders, and the "bench-svg:" line the script reads; BENCH_SVG_OUT=FILE keeps
// the picture. Time is judged there, never here.
TEST_CASE("svg: 50,000 unique stacks make a file under 5 MB")
{
	const Profile profile = many_stacks_profile(50000);
	const bool bench = std::getenv("BENCH_SVG");
	std::string svg;
	double best = 1e9;
	for (int run = 0; run < (bench ? 3 : 1); run++) {
		const auto start = std::chrono::steady_clock::now();
		svg = render(profile);
		best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
	}
	CHECK(svg.size() < 5u * 1000 * 1000);
	CHECK(find_box(parse_boxes(svg), "all").samples == profile.total());
	if (!bench)
		return;
	std::ostringstream pprof, folded;
	write_pprof(pprof, profile);
	write_folded(folded, profile, {});
	if (const char *keep = std::getenv("BENCH_SVG_OUT"))
		write_file(keep, svg);
	std::printf("bench-svg: stacks=%zu frames=%zu boxes=%zu seconds=%.3f bytes=%zu pprof_bytes=%zu "
		    "folded_bytes=%zu\n",
		    profile.samples.size(), profile.frames.size(), parse_boxes(svg).size(), best, svg.size(),
		    pprof.str().size(), folded.str().size());
}

TEST_CASE("svg: headless Chromium renders the flame graph")
{
	TempDir dir;
	write_file(dir / "tricky.svg", render(tricky_profile()));
	const CommandResult shot = chromium(dir / "tricky.svg", {"--screenshot=" + (dir / "shot.png")}, dir);
	REQUIRE_MESSAGE(shot.status == 0, "chromium failed: " << shot.err);
	Image image;
	std::string error;
	REQUIRE_MESSAGE(decode_png(read_file(dir / "shot.png"), image, error), error);
	CHECK(image.width == 1200);
	CHECK(image.height == 800);
	// Count the pixels of the boxes' strong colours; the pale background gradient, grey
	// boxes, text and white page do not count.
	size_t coloured = 0, blue = 0;
	for (size_t p = 0; p + 3 < image.rgba.size(); p += 4) {
		const int r = image.rgba[p], g = image.rgba[p + 1], b = image.rgba[p + 2];
		if (std::max({r, g, b}) - std::min({r, g, b}) > 80)
			coloured++;
		if (b > 200 && b - r > 50)
			blue++;
	}
	const double pixels = double(image.width) * image.height;
	INFO("coloured pixels " << coloured / pixels * 100 << "%, blue " << blue / pixels * 100 << "%");
	// The boxes are 6 rows of about 1180 x 15 px, with labels on them: about 9% of the window.
	CHECK(coloured / pixels > 0.05);
	CHECK(blue / pixels > 0.01);
}

TEST_CASE("svg: hover, zoom, reset and search run in Chromium without script errors")
{
	const std::string svg = render(tricky_profile());
	const std::string catch_errors = "window.testErrors = [];"
		"window.addEventListener('error', function (e) { window.testErrors.push(e.message); });";
	// Inside SVG markup a script needs CDATA around its < and &; in HTML it must not have it.
	auto svg_script = [](const std::string &code) {
		return "<script type=\"text/ecmascript\"><![CDATA[" + code + "]]></script>\n";
	};
	auto html_script = [](const std::string &code) { return "<script>" + code + "</script>\n"; };

	// As a file of its own, the way users open it, and inline in an HTML page.
	std::string standalone = svg;
	standalone.insert(standalone.find("<g id=\"frames\">"), svg_script(catch_errors));
	standalone.insert(standalone.rfind("</svg>"), svg_script(interaction_script));
	const std::string html = "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">" +
				 html_script(catch_errors) + "</head><body>\n" +
				 svg.substr(svg.find("<svg")) + html_script(interaction_script) +
				 "</body></html>\n";

	TempDir dir;
	write_file(dir / "test.svg", standalone);
	write_file(dir / "test.html", html);
	for (const char *page : {"test.svg", "test.html"}) {
		CAPTURE(page);
		const CommandResult dump = chromium(dir / page, {"--dump-dom"}, dir);
		REQUIRE_MESSAGE(dump.status == 0, "chromium failed: " << dump.err);
		auto results = interaction_results(dump.out);
		REQUIRE_MESSAGE(!results.empty(), "the test script left no result; stderr: " << dump.err);
		CHECK(results["exception"] == "");
		CHECK(results["errors"] == "none");
		CHECK(results["hover"] == "true");
		// An inlined box is searched and labelled by its function's name; its tooltip says inlined.
		CHECK(results["inlined_name"] == "inline_helper(Foo<Bar>&)");
		CHECK(results["inlined_hover"] == "Function: inline_helper(Foo<Bar>&) (150 samples, 15.00%, inlined)");
		CHECK(results["zoom_width"] == "1180.0");
		CHECK(results["zoom_child"] == "1177.1"); // 400 of 401 samples
		CHECK(results["sibling_hidden"] == "true");
		CHECK(results["parent_faded"] == "true");
		CHECK(results["unzoom_shown"] == "true");
		CHECK(results["narrow_gets_text"] == "true");
		CHECK(results["reset_width"] == "473.2");
		CHECK(results["reset_hidden"] == "0");
		CHECK(results["unzoom_hidden"] == "true");
		// push_back (401) holds both operator new (1) and clear_page_erms (400): counted once.
		CHECK(results["search"] == "40.1");
		CHECK(results["matched"] == "Matched: 40.10%");
		CHECK(results["highlighted"].starts_with("#e600e6,#"));
		CHECK(results["highlighted"] != "#e600e6,#e600e6");
		CHECK(results["bad_regex"] == "-1");
		CHECK(results["search_reset"] == "true");
	}
}

} // TEST_SUITE
