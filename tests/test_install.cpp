// tests/test_install.cpp: profile as a system tool: the man page says what --help and the code
// say, and renders cleanly; `make install` lays out the program, the page and the agent's
// systemd unit, which systemd-analyze accepts.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "cli/options.h"
#include "push/push.h"
#include "tests/support.h"
#include "tests/test_report_data.h"

namespace fs = std::filesystem;

namespace {

// The source tree under test: the parent of the build folder `make check` names.
fs::path source_tree()
{
	return fs::weakly_canonical(fs::path(output_dir()) / "..");
}

std::string man_page_path()
{
	return (source_tree() / "doc/profile.8").string();
}

// A tool the test needs: its path, or "" when it is missing, which CI counts as a failure
// (scripts/install-deps.sh installs it there).
std::string tool_for_test(const std::string &name, const std::string &package)
{
	std::string path = find_tool(name);
	if (path.empty())
		skip_test(name + " is missing (apt-get install " + package + ")");
	return path;
}

// "-f", "--frequency": the options a tag names ("-f, -F, --frequency HZ").
std::set<std::string> option_names(const std::string &tag)
{
	static const std::regex option(R"((?:^|[\s,(])(--?[A-Za-z][A-Za-z0-9_-]*))");
	std::set<std::string> names;
	for (auto it = std::sregex_iterator(tag.begin(), tag.end(), option); it != std::sregex_iterator(); ++it)
		names.insert((*it)[1]);
	return names;
}

// Option ("-f", "--frequency") -> its group in the option table.
std::map<std::string, std::string> table_options()
{
	std::map<std::string, std::string> options;
	for (const OptionSpec &spec : option_table()) {
		for (const char *c = spec.shorts; *c; c++)
			options[std::string("-") + *c] = spec.group;
		options[std::string("--") + spec.name] = spec.group;
	}
	return options;
}

// The text a line of roff shows, near enough to read names from: no macro, no font
// changes, no quotes, \- as -, \(aq as '.
std::string roff_text(std::string line)
{
	if (line.starts_with("."))
		line = line.find(' ') == std::string::npos ? "" : line.substr(line.find(' ') + 1);
	line = std::regex_replace(line, std::regex(R"(\\f[BIRP])"), "");
	line = std::regex_replace(line, std::regex(R"(\\[%:&])"), "");
	line = std::regex_replace(line, std::regex(R"(\\-)"), "-");
	line = std::regex_replace(line, std::regex(R"(\\\(aq)"), "'");
	line = std::regex_replace(line, std::regex("\""), "");
	return line;
}

struct ManPage {
	std::vector<std::string> lines;                  // without comment lines
	std::map<std::string, std::string> options;      // OPTIONS' tags -> their .SS
	std::set<std::pair<std::string, std::string>> rows; // OPTIONS' (.SS, tag) of options, as --help writes tags
	std::set<std::string> subsections;               // .SS names of OPTIONS
	std::set<std::string> environment;               // ENVIRONMENT's tags
};

ManPage read_man_page()
{
	ManPage page;
	std::string text = read_file(man_page_path());
	REQUIRE_MESSAGE(!text.empty(), man_page_path() << " is missing");
	for (const std::string &line : split_lines(text))
		if (!line.starts_with(".\\\""))
			page.lines.push_back(line);
	std::string section, subsection;
	for (size_t i = 0; i < page.lines.size(); i++) {
		const std::string &line = page.lines[i];
		if (line.starts_with(".SH ")) {
			section = roff_text(line);
			subsection = "";
		} else if (line.starts_with(".SS ")) {
			subsection = roff_text(line);
			if (section == "OPTIONS")
				page.subsections.insert(subsection);
		} else if (line == ".TP" && i + 1 < page.lines.size()) {
			const std::string tag = roff_text(page.lines[i + 1]);
			if (section == "OPTIONS") {
				for (const std::string &name : option_names(tag))
					page.options[name] = subsection;
				if (tag.starts_with("-")) {
					// ".BR \-f ", " \-F" reads "-f ,  -F": spaces as --help has them.
					std::string row = std::regex_replace(tag, std::regex(" +"), " ");
					row = std::regex_replace(row, std::regex(" ,"), ",");
					page.rows.insert({subsection, row});
				}
			}
			if (section == "ENVIRONMENT")
				page.environment.insert(tag);
		}
	}
	return page;
}

// The product's folders (not the tests, scripts, docs, builds or hidden ones).
std::vector<std::string> product_folders()
{
	std::vector<std::string> folders;
	for (const auto &entry : fs::directory_iterator(source_tree())) {
		const std::string dir = entry.path().filename();
		if (entry.is_directory() && !dir.starts_with(".") && !dir.starts_with("build") &&
		    !std::set<std::string>{"tests", "scripts", "doc", "systemd"}.count(dir))
			folders.push_back(dir);
	}
	std::sort(folders.begin(), folders.end());
	return folders;
}

// The product's source files, relative to the tree: the root's and every product folder's
// .h, .cpp and .bpf.c files.
std::vector<std::string> product_files()
{
	std::vector<std::string> files = {"profile.cpp", "profile.h", "profile.bpf.c"};
	for (const std::string &dir : product_folders())
		for (const auto &file : fs::recursive_directory_iterator(source_tree() / dir))
			if (file.path().extension() == ".h" || file.path().extension() == ".cpp" ||
			    file.path().extension() == ".c")
				files.push_back(fs::relative(file.path(), source_tree()).string());
	return files;
}

// The PROFILE_* variables the program's sources read with getenv, and the OTEL_* ones of
// OpenTelemetry's exporters, read through an Environment (cli/otel_env.h) by their names.
std::set<std::string> variables_read()
{
	static const std::regex getenv_call(R"re(getenv\("(PROFILE_[A-Z0-9_]+)"\)|"(OTEL_[A-Z0-9_]+)")re");
	std::set<std::string> names;
	for (const std::string &file : product_files()) {
		const std::string text = read_file((source_tree() / file).string());
		for (auto it = std::sregex_iterator(text.begin(), text.end(), getenv_call); it != std::sregex_iterator(); ++it)
			names.insert((*it)[1].matched ? (*it)[1] : (*it)[2]);
	}
	return names;
}

mode_t mode_of(const std::string &path)
{
	struct stat st;
	return stat(path.c_str(), &st) == 0 ? st.st_mode : 0;
}

// `make -C TREE args...` as the suite's own build would run it: the suite's make variables
// (MAKEFLAGS, and with them -j's jobserver) stay out, SANITIZE=1 when testing build-asan/profile.
CommandResult make_in_tree(std::vector<std::string> args)
{
	std::vector<std::string> argv = {find_tool("env"), "-u", "MAKEFLAGS", "-u", "MFLAGS", "-u", "MAKELEVEL",
					 find_tool("make"), "--no-print-directory", "-C", source_tree().string()};
	if (fs::path(profile_bin()).parent_path().filename() == "build-asan")
		argv.push_back("SANITIZE=1");
	argv.insert(argv.end(), args.begin(), args.end());
	return run_command(argv, 120);
}

// The unit's lines "Key=value" of one key.
std::vector<std::string> unit_values(const std::string &unit, const std::string &key)
{
	std::vector<std::string> values;
	for (const std::string &line : split_lines(unit))
		if (line.starts_with(key + "="))
			values.push_back(line.substr(key.size() + 1));
	return values;
}

std::set<std::string> words(const std::string &text)
{
	std::set<std::string> set;
	std::istringstream in(text);
	for (std::string word; in >> word;)
		set.insert(word);
	return set;
}

} // namespace

TEST_SUITE("unit") {

TEST_CASE("install: profile(8)'s OPTIONS document every option of the table, with its value, under its group, and no other")
{
	const ManPage page = read_man_page();
	std::set<std::pair<std::string, std::string>> table;
	for (const OptionRow &row : option_rows())
		table.insert({row.group, row.synopsis});
	REQUIRE(table.size() > 30);
	for (const auto &[group, synopsis] : table)
		CHECK_MESSAGE(page.rows.count({group, synopsis}) == 1,
			      "--help's \"" << synopsis << "\" (" << group << ") is no tag under .SS " << group
					   << " in profile(8)'s OPTIONS");
	for (const auto &[subsection, tag] : page.rows)
		CHECK_MESSAGE(table.count({subsection, tag}) == 1,
			      "profile(8)'s \"" << tag << "\" (.SS " << subsection << ") is no row of --help");
}

TEST_CASE("install: doc/options.md's Options block is --help, line for line")
{
	const std::string readme = read_file((source_tree() / "doc/options.md").string());
	const size_t heading = readme.find("\n## Options\n");
	REQUIRE(heading != std::string::npos);
	const size_t open = readme.find("```\n", heading);
	REQUIRE(open != std::string::npos);
	const size_t close = readme.find("\n```\n", open);
	REQUIRE(close != std::string::npos);
	const std::vector<std::string> block = split_lines(readme.substr(open + 4, close + 1 - (open + 4)));
	const std::vector<std::string> help = split_lines(help_text());
	for (size_t i = 0; i < std::max(block.size(), help.size()); i++) {
		const std::string in_readme = i < block.size() ? block[i] : "(the end)";
		const std::string in_help = i < help.size() ? help[i] : "(the end)";
		CHECK_MESSAGE(in_readme == in_help, "doc/options.md's Options block differs from ./profile --help at line "
							    << i + 1 << ": run scripts/options-doc.sh");
		if (in_readme != in_help)
			break;
	}
}

TEST_CASE("install: every long option profile(8) names anywhere is one of profile's")
{
	const std::map<std::string, std::string> help = table_options();
	// Other programs' options the page shows in commands.
	const std::set<std::string> others = {"--now", "--preserve-env", "--decode_raw"};
	for (const std::string &line : read_man_page().lines)
		for (const std::string &name : option_names(roff_text(line)))
			if (name.starts_with("--")) {
				CAPTURE(line);
				CHECK_MESSAGE((help.count(name) == 1 || others.count(name) == 1),
					      name << " is named in profile(8) but is no option of profile");
			}
}

TEST_CASE("install: profile(8)'s ENVIRONMENT lists every PROFILE_ and OTEL_ variable the code reads, and no other")
{
	const std::set<std::string> read = variables_read();
	REQUIRE(read.count("PROFILE_DEBUG") == 1); // the scan found the sources
	const std::set<std::string> documented = read_man_page().environment;
	for (const std::string &name : read)
		CHECK_MESSAGE(documented.count(name) == 1, name << " is read by the code but not in profile(8)'s ENVIRONMENT");
	for (const std::string &name : documented)
		CHECK_MESSAGE(read.count(name) == 1, name << " is in profile(8)'s ENVIRONMENT but no code reads it");
}

TEST_CASE("install: groff, nroff at 80 columns and man render profile(8) without a warning")
{
	const std::string page = man_page_path();
	const std::string groff = tool_for_test("groff", "groff-base");
	if (groff.empty())
		return;
	CommandResult r = run_command({groff, "-man", "-ww", "-z", page});
	CHECK_MESSAGE(r.status == 0, r.err);
	CHECK_MESSAGE(r.err.empty(), "groff -man -ww -z: " << r.err);
	// What man runs for an 80-column terminal.
	r = run_command({find_tool("nroff"), "-man", "-rLL=78n", "-rLT=78n", "-ww", page});
	CHECK_MESSAGE(r.status == 0, r.err);
	CHECK_MESSAGE(r.err.empty(), "nroff at 80 columns: " << r.err);
	CHECK(contains(r.out, "System Administration")); // the page was rendered
	const std::string man = tool_for_test("man", "man-db");
	if (man.empty())
		return;
	ScopedEnv width("MANWIDTH", "80");
	r = run_command({man, "-l", page});
	CHECK_MESSAGE(r.status == 0, r.err);
	CHECK_MESSAGE(r.err.empty(), "MANWIDTH=80 man -l: " << r.err);
}

TEST_CASE("install: profile-agent.service.in: the agent's command line is profile's, its capabilities granted as bounded")
{
	const std::string unit = read_file((source_tree() / "systemd/profile-agent.service.in").string());
	REQUIRE(!unit.empty());
	const std::vector<std::string> exec = unit_values(unit, "ExecStart");
	REQUIRE(exec.size() == 1);
	CHECK(exec[0].starts_with("@SBINDIR@/profile "));
	const std::map<std::string, std::string> help = table_options();
	for (const std::string &name : option_names(exec[0]))
		CHECK_MESSAGE(help.count(name) == 1, "the unit runs profile with " << name << ", which is no option");
	CHECK(contains(exec[0], "--agent"));
	// The server's credentials: from systemd's credentials, never the command line; without
	// the file, a fallback that --push-auth-file reads as no credentials.
	CHECK(contains(exec[0], "--push-auth-file ${CREDENTIALS_DIRECTORY}/push-auth"));
	CHECK(unit_values(unit, "LoadCredential") ==
	      std::vector<std::string>{"push-auth:/etc/credstore/profile-agent.push-auth"});
	const std::vector<std::string> fallback = unit_values(unit, "SetCredential");
	REQUIRE(fallback.size() == 1);
	REQUIRE(fallback[0].starts_with("push-auth:"));
	const Result<PushAuth> none = parse_push_auth(fallback[0].substr(std::string("push-auth:").size()));
	CHECK(none.ok());
	CHECK((none.ok() && none->headers.empty()));
	// One set of capabilities, each both allowed and granted.
	const std::vector<std::string> bounding = unit_values(unit, "CapabilityBoundingSet");
	const std::vector<std::string> ambient = unit_values(unit, "AmbientCapabilities");
	REQUIRE(bounding.size() == 1);
	REQUIRE(ambient.size() == 1);
	CHECK(words(bounding[0]) == words(ambient[0]));
	CHECK(words(bounding[0]).count("CAP_BPF") == 1);
	CHECK(words(bounding[0]).count("CAP_PERFMON") == 1);
	CHECK(words(bounding[0]).count("CAP_SYS_ADMIN") == 0);
}

TEST_CASE("layout: the root of the tree holds the files the layout names and no other")
{
	// Everything else lives in a folder that says what it is for (a stray probe script
	// at the root once did nothing for the product).
	// The kernel side's headers are in folders too: what its rooms share in base/
	// (kernel.bpf.h), --off-cpu's programs in offcpu/, the others beside their user
	// halves; profile.h (what the kernel side and user space share) stays here.
	const std::set<std::string> allowed = {"Makefile",    "README.md",  "LICENSE",       "profile.bpf.c",
					       "profile.cpp", "profile.h",  ".gitignore",    ".clang-format",
					       ".editorconfig"};
	const fs::path tree = source_tree();
	std::set<std::string> files;
	const std::string git = find_tool("git");
	const bool checkout = !git.empty() && fs::exists(tree / ".git");
	if (checkout) {
		// Run as root in a user's clone, git wants the tree named safe.
		CommandResult r = run_command({git, "-c", "safe.directory=*", "-C", tree.string(), "ls-files"});
		REQUIRE_MESSAGE(r.status == 0, r.err);
		for (const std::string &path : split_lines(r.out))
			if (path.find('/') == std::string::npos)
				files.insert(path);
	} else {
		// Not a checkout: what is there, but for what the build puts at the root.
		for (const auto &entry : fs::directory_iterator(tree))
			if (!entry.is_directory() && entry.path().filename() != "profile")
				files.insert(entry.path().filename());
	}
	REQUIRE(files.count("Makefile") == 1);
	for (const std::string &name : files)
		CHECK_MESSAGE(allowed.count(name) == 1, name << " is at the root of the tree (" << std::string(checkout ? "git ls-files" : "the folder")
							  << "): move it into the folder it belongs to, or name it in this test");
}

TEST_CASE("layout: every #include runs down the folders' order, the kernel side's too: profile.h, base, model, elf, proc, syms, runtime, python, v8, hotspot, runtimes, unwind, sampler, offcpu, report, push, cli, run, profile.cpp")
{
	// Each layer may include its own and those before it, never one after it: the shared
	// basics (base/: fds, diagnostics) and the sources of truth (ELF and DWARF files,
	// processes, symbols, unwinding) know nothing of the sampler, the sampler nothing of
	// reports, pushes or the command line. profile.h (the types the kernel side and user
	// space share) is the contract, below every room, and includes none; base/kernel.bpf.h
	// (what the kernel side's rooms share) is among the basics; report/model.h (the symbolized profile every
	// layer above hands on) is the data model, below elf/. The kernel side's .bpf.h files
	// are held to the same order as the rest of their folders. A language runtime (python/,
	// hotspot/) is a room between what every runtime shares (runtime/) and their registry
	// (runtimes/), which the table walk (unwind/) calls; off-CPU time (offcpu/) counts in
	// the sampler's maps and walks with the unwinder. The run's pipeline (run/) comes after
	// the command line (cli/) whose plan it carries out.
	const std::vector<std::string> order = {"contract", "base",     "model",  "elf",     "proc",   "syms",
						"runtime",  "python",   "v8",       "hotspot", "runtimes", "unwind", "sampler",
						"offcpu",   "report",   "push",     "cli",     "run",      "profile.cpp"};
	auto layer = [](const std::string &path) -> std::string {
		if (path == "report/model.h")
			return "model";
		if (path == "profile.h")
			return "contract";
		if (path == "profile.bpf.c")
			return "profile.cpp";
		return path.substr(0, path.find('/'));
	};
	auto rank = [&](const std::string &name) {
		return size_t(std::find(order.begin(), order.end(), name) - order.begin());
	};
	const fs::path tree = source_tree();
	for (const std::string &dir : product_folders())
		CHECK_MESSAGE(rank(dir) < order.size(), dir << "/ has no place in the folders' order: name it in this test");
	const std::vector<std::string> files = product_files();
	REQUIRE(files.size() > 40);
	static const std::regex include(R"re(^\s*#\s*include\s+"([^"]+)")re");
	size_t includes = 0, kernel_includes = 0;
	for (const std::string &file : files) {
		for (const std::string &line : split_lines(read_file((tree / file).string()))) {
			std::smatch m;
			if (!std::regex_search(line, m, include))
				continue;
			const std::string target = m[1];
			// Made by the build: the skeleton is the sampler's, vmlinux.h the BPF side's.
			if (target == "profile.skel.h" || target == "vmlinux.h")
				continue;
			includes++;
			const bool kernel_side = file.ends_with(".bpf.h") || file.ends_with(".bpf.c");
			kernel_includes += kernel_side;
			// Only the kernel side includes the kernel side.
			if (target.ends_with(".bpf.h"))
				CHECK_MESSAGE(kernel_side, file << " includes " << target << ": only the kernel side's files "
								"include its headers");
			CHECK_MESSAGE(rank(layer(target)) <= rank(layer(file)),
				      file << " (" << layer(file) << ") includes " << target << " (" << layer(target)
					   << "), which comes after it in the folders' order");
		}
	}
	CHECK(kernel_includes > 10); // the kernel side was read too
	CHECK(includes > 100); // the scan read the includes
}

TEST_CASE("layout: a language runtime is named in at most 4 product files outside its own room")
{
	// A runtime is a room (its folder) registered in runtimes/ on each side, with a frame
	// kind in report/model: adding one touches no other room. Comments count too: a file
	// that explains a runtime's case by name is one that knows of it.
	const std::vector<std::string> files = product_files();
	REQUIRE(files.size() > 40);
	for (const std::string runtime : {"python", "v8", "hotspot"}) {
		const std::regex word("\\b" + runtime + "\\b", std::regex::icase);
		std::vector<std::string> naming;
		for (const std::string &file : files)
			if (!file.starts_with(runtime + "/") && std::regex_search(read_file((source_tree() / file).string()), word))
				naming.push_back(file);
		std::string list;
		for (const std::string &file : naming)
			list += " " + file;
		CHECK_MESSAGE(naming.size() <= 4, runtime << " is named in " << naming.size() << " files outside " << runtime
							 << "/:" << list);
		CHECK_MESSAGE(!naming.empty(), runtime << " is in no registry: the scan read nothing");
	}
}

} // TEST_SUITE("unit")

TEST_SUITE("integration") {

TEST_CASE("install: make install puts the program, its man page and the agent's unit where PREFIX says; systemd-analyze verify accepts the unit; make uninstall removes them")
{
	const fs::path tree = source_tree();
	const std::string binary = fs::weakly_canonical(profile_bin()).string();
	const std::string target = fs::relative(binary, tree).string();
	REQUIRE_MESSAGE(!target.starts_with(".."), profile_bin() << " is not in " << tree);
	// install builds what is out of date, and the tree under test must not change under
	// the running suite: the program must be current already.
	CommandResult current = make_in_tree({"-q", target});
	REQUIRE_MESSAGE(current.status == 0, target << " is not up to date with its sources (make -q: "
						   << current.status << current.err << "): run make first");

	TempDir dest;
	CommandResult r = make_in_tree({"install", "DESTDIR=" + dest.path().string(), "PREFIX=/usr"});
	REQUIRE_MESSAGE(r.status == 0, r.out << r.err);
	const std::string sbin = dest / "usr/sbin/profile", man = dest / "usr/share/man/man8/profile.8",
			  unit = dest / "usr/lib/systemd/system/profile-agent.service";
	CHECK(contains(r.out, "  INSTALL  " + sbin));
	CHECK((mode_of(sbin) & 07777) == 0755);
	CHECK(S_ISREG(mode_of(sbin)));
	CHECK(read_file(sbin) == read_file(binary));
	CHECK((mode_of(man) & 07777) == 0644);
	CHECK(read_file(man) == read_file(man_page_path()));
	CHECK((mode_of(unit) & 07777) == 0644);
	const std::string unit_text = read_file(unit);
	const std::vector<std::string> exec = unit_values(unit_text, "ExecStart");
	REQUIRE(exec.size() == 1);
	CHECK(exec[0].starts_with("/usr/sbin/profile --agent "));
	CHECK_MESSAGE(!std::regex_search(unit_text, std::regex("@[A-Z_]+@")), "a placeholder is left in the unit");

	// The default prefix is /usr/local, which systemd searches for units as well.
	TempDir local;
	CHECK(make_in_tree({"install", "DESTDIR=" + local.path().string()}).status == 0);
	CHECK(access((local / "usr/local/sbin/profile").c_str(), X_OK) == 0);
	CHECK(unit_values(read_file(local / "usr/local/lib/systemd/system/profile-agent.service"), "ExecStart")
		      .at(0)
		      .starts_with("/usr/local/sbin/profile "));

	// systemd-analyze checks that ExecStart's program exists and that man finds the page of
	// Documentation=: a copy of the unit names the installed program, under DESTDIR, and
	// MANPATH the installed page.
	const std::string analyze = tool_for_test("systemd-analyze", "systemd");
	if (!analyze.empty()) {
		TempDir check;
		const std::string copy = check / "profile-agent.service";
		std::string copied;
		for (const std::string &line : split_lines(unit_text))
			copied += (line.starts_with("ExecStart=/usr/sbin/profile ")
					   ? "ExecStart=" + sbin + line.substr(std::string("ExecStart=/usr/sbin/profile").size())
					   : line) +
				  "\n";
		write_file(copy, copied);
		ScopedEnv manpath("MANPATH", (dest / "usr/share/man").c_str());
		CommandResult verify = run_command({analyze, "verify", copy});
		CHECK_MESSAGE(verify.status == 0, verify.out << verify.err);
		CHECK_MESSAGE(verify.err.empty(), "systemd-analyze verify: " << verify.err);
		CHECK_MESSAGE(verify.out.empty(), "systemd-analyze verify: " << verify.out);
	}

	r = make_in_tree({"uninstall", "DESTDIR=" + dest.path().string(), "PREFIX=/usr"});
	CHECK_MESSAGE(r.status == 0, r.out << r.err);
	for (const std::string &path : {sbin, man, unit}) {
		CAPTURE(path);
		CHECK(!fs::exists(path));
	}
}

} // TEST_SUITE("integration")
