// cli/help.cpp: --help, written from the option table: each option's rows by group, wrapped
// to the terminal's usual width, between a head and a tail of prose.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/options.h"

namespace {

// What a group of --help says before its options ("Name: intro") and after them.
struct GroupText {
	const char *name, *intro, *outro;
};
const GroupText group_texts[] = {
	{"Sampling",
	 "a timer on each CPU (the kernel's cpu-clock event) takes a sample of whatever runs there, kernel and "
	 "user stack, as often as -f or -c says.",
	 nullptr},
	{"Off-CPU time", "where threads wait, and for how long, rather than where the CPU goes.", nullptr},
	{"Output", "without one of these, multi-line stacks in BCC's layout, the hottest stack printed last.",
	 nullptr},
	{"Continuous profiling", "cut the run into windows, each its own report.",
	 "Each pprof sample carries its process as labels: pid, comm, and, read from /proc/PID/cgroup, its cgroup "
	 "path and container id (docker, containerd, CRI-O, podman, Kubernetes pods). -E's folded roots read "
	 "comm-PID@CONTAINER (12 characters of the id) for processes in a container."},
	{"Limits",
	 "the kernel keeps what is sampled in maps until profile reads them (as they fill, and at the end); a "
	 "full map loses samples, and the last line on stderr then says how many and which option to raise. "
	 "Larger maps take more kernel memory, from the start of the run: above 1 GiB profile warns, above half "
	 "the memory available it refuses.",
	 nullptr},
};

// --help's lines are at most this wide.
constexpr size_t help_width = 88;
// Where an option's text starts on its row.
constexpr size_t help_column = 26;

// Appends `text` word by word to `out`, whose last line has `column` characters, wrapping
// at help_width to lines indented by `indent`.
void wrap(std::string &out, std::string_view text, size_t column, size_t indent)
{
	bool first = true;
	while (!text.empty()) {
		size_t space = text.find(' ');
		std::string_view word = text.substr(0, space);
		text = space == std::string_view::npos ? "" : text.substr(space + 1);
		if (word.empty())
			continue;
		if (!first && column + 1 + word.size() > help_width) {
			out += '\n' + std::string(indent, ' ');
			column = indent;
		} else if (!first) {
			out += ' ';
			column++;
		}
		out += word;
		column += word.size();
		first = false;
	}
	out += '\n';
}

// "-f, -F, --frequency HZ", or with a choice "--unwind auto".
std::string synopsis(const OptionSpec &spec, const char *choice)
{
	std::string text;
	for (const char *c = spec.shorts; *c; c++)
		text += std::string("-") + *c + ", ";
	text += std::string("--") + spec.name;
	if (choice)
		text += std::string(" ") + choice;
	else if (spec.value_name)
		text += std::string(" ") + spec.value_name;
	return text;
}

// An option's rows in --help: (synopsis, text) of each choice that has its own, else of
// the option.
std::vector<std::pair<std::string, std::string>> help_rows(const OptionSpec &spec)
{
	std::vector<std::pair<std::string, std::string>> rows;
	for (const OptionChoice &choice : spec.choices)
		if (choice.help)
			rows.push_back({synopsis(spec, choice.name), choice.help});
	if (rows.empty())
		rows.push_back({synopsis(spec, nullptr),
				replace_all(replace_all(spec.help, "{default}", spec.default_value ? spec.default_value : ""),
					    "{choices}", choice_list(spec, true))});
	return rows;
}

void help_row(std::string &out, const std::string &synopsis, const std::string &help)
{
	std::string line = "  " + synopsis;
	line += line.size() + 2 <= help_column ? std::string(help_column - line.size(), ' ') : "  ";
	out += line;
	wrap(out, help, line.size(), help_column);
}

const char help_head[] = R"(Usage: profile [OPTIONS] [DURATION]

Samples the stacks running on every CPU at a fixed rate, counts identical stacks inside
the kernel, and prints them, symbolized, when sampling ends.

Note: BCC's profile uses -f for folded output; here -f is the frequency (as -F), and
folded output is --folded.

DURATION                  seconds to sample; without it, until Ctrl-C, SIGTERM or
                          SIGHUP. With -p or -L, sampling also ends once every process
                          or thread sampled has exited. The stacks collected so far are
                          printed either way.
)";

const char help_tail[] = R"(
Names of stripped programs and libraries: from their debug files, found by build id
under /usr/lib/debug/.build-id or by their .gnu_debuglink. With DEBUGINFOD_URLS set
(sudo drops it: sudo --preserve-env=DEBUGINFOD_URLS), the debug files not found here
are fetched from those debuginfod servers at the end of the run, by libdebuginfod, in
parallel, and kept in DEBUGINFOD_CACHE_PATH (for root: /var/cache/profile/debuginfod).
A file whose build id differs from the program's is not used.

Examples:
  sudo ./profile -f 49 10           # all CPUs at 49 Hz for 10 seconds
  sudo ./profile -p 1234 --folded   # one process, folded, until Ctrl-C
  sudo ./profile -o cpu.svg 10      # a flame graph
  sudo ./profile --interval 60 -o 'cpu-%H%M.svg'     # a flame graph a minute
  sudo ./profile --agent --push http://pyroscope:4040/ingest   # a continuous agent
)";

} // namespace

std::vector<OptionRow> option_rows()
{
	std::vector<OptionRow> rows;
	for (const OptionSpec &spec : option_table())
		for (const auto &[synopsis, help] : help_rows(spec))
			rows.push_back({spec.group, synopsis});
	return rows;
}

std::string help_text()
{
	std::string text = help_head;
	std::string group;
	for (const OptionSpec &spec : option_table()) {
		if (spec.group != group) {
			group = spec.group;
			const GroupText *texts = nullptr;
			for (const GroupText &g : group_texts)
				if (group == g.name)
					texts = &g;
			text += '\n';
			if (texts && texts->intro) {
				text += group + ": ";
				wrap(text, texts->intro, group.size() + 2, 0);
			} else {
				text += group + '\n';
			}
		}
		for (const auto &[synopsis, help] : help_rows(spec))
			help_row(text, synopsis, help);
		const bool last_of_group = &spec == &option_table().back() || (&spec + 1)->group != group;
		if (last_of_group)
			for (const GroupText &g : group_texts)
				if (group == g.name && g.outro) {
					text += "\n  ";
					wrap(text, g.outro, 2, 2);
				}
	}
	return text + help_tail;
}
