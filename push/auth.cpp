// push/auth.cpp: what a push carries besides the window: credentials read from a file only
// root (or the service's own user) can read, extra headers, the TLS files, and the rules
// for Retry-After and redirects.
#include <curl/curl.h>
#include <fcntl.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "push/curl_url.h"
#include "push/push.h"
#include "base/fd.h"

namespace {

constexpr size_t secret_file_max = 64 << 10;

std::string lower(std::string_view text)
{
	std::string out(text);
	for (char &c : out)
		c = char(std::tolower(static_cast<unsigned char>(c)));
	return out;
}

std::string_view trim(std::string_view text)
{
	while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
		text.remove_prefix(1);
	while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
		text.remove_suffix(1);
	return text;
}

// RFC 9110's token characters, which a header's name is made of.
bool token_char(unsigned char c)
{
	return std::isalnum(c) || (c && std::strchr("!#$%&'*+-.^_`|~", c));
}

// "Name: value": a token, a colon, then a space or tab (what tells a header from a
// USER:PASSWORD line in an auth file).
bool header_form(std::string_view line)
{
	const size_t colon = line.find(':');
	return colon != std::string_view::npos && colon > 0 && colon + 1 < line.size() &&
	       (line[colon + 1] == ' ' || line[colon + 1] == '\t') &&
	       std::all_of(line.begin(), line.begin() + colon, [](char c) { return token_char(c); });
}

std::string octal_mode(mode_t mode)
{
	char text[8];
	snprintf(text, sizeof(text), "%04o", unsigned(mode & 07777));
	return text;
}

} // namespace

std::string base64(std::string_view data)
{
	static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	std::string out;
	for (size_t i = 0; i < data.size(); i += 3) {
		uint32_t n = static_cast<unsigned char>(data[i]) << 16;
		if (i + 1 < data.size())
			n |= static_cast<unsigned char>(data[i + 1]) << 8;
		if (i + 2 < data.size())
			n |= static_cast<unsigned char>(data[i + 2]);
		out += digits[n >> 18 & 63];
		out += digits[n >> 12 & 63];
		out += i + 1 < data.size() ? digits[n >> 6 & 63] : '=';
		out += i + 2 < data.size() ? digits[n & 63] : '=';
	}
	return out;
}

std::optional<std::pair<std::string, std::string_view>> answer_field(std::string_view line)
{
	const size_t colon = line.find(':');
	if (colon == std::string_view::npos)
		return std::nullopt;
	std::string_view value = line.substr(colon + 1);
	while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
		value.remove_prefix(1);
	return std::pair{lower(line.substr(0, colon)), value};
}

Status check_push_header(std::string_view header)
{
	const size_t colon = header.find(':');
	if (colon == std::string_view::npos)
		return Error("expected 'Name: value'");
	const std::string_view name = header.substr(0, colon);
	if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) { return token_char(c); }))
		return Error("expected 'Name: value', the name made of letters, digits and -");
	const std::string_view value = trim(header.substr(colon + 1));
	if (value.empty())
		return Error("the header '" + std::string(name) + "' has no value");
	if (std::any_of(value.begin(), value.end(), [](char c) {
		    const auto u = static_cast<unsigned char>(c);
		    return (u < ' ' && u != '\t') || u == 0x7f;
	    }))
		return Error("the value of '" + std::string(name) + "' holds a control character");
	// Those profile sends itself, or that frame the request: another would garble it.
	static const char *const own[] = {"host", "content-type", "content-length", "transfer-encoding",
					  "expect", "connection", "user-agent", "x-grpc-web", "te",
					  "content-encoding"};
	const std::string key = lower(name);
	for (const char *mine : own)
		if (key == mine)
			return Error("profile sets " + std::string(name) + " itself");
	return {};
}

Result<PushAuth> parse_push_auth(std::string_view text)
{
	PushAuth auth;
	std::string authorization;
	size_t number = 0;
	while (!text.empty()) {
		const size_t end = text.find('\n');
		const std::string_view line = trim(text.substr(0, end));
		text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
		number++;
		const std::string where = "line " + std::to_string(number) + ": ";
		if (line.empty() || line.front() == '#')
			continue;
		std::string credential;
		if (lower(line.substr(0, 7)) == "bearer " || lower(line) == "bearer") {
			const std::string_view token = trim(line.substr(6));
			if (token.empty() || std::any_of(token.begin(), token.end(), [](char c) {
				    return static_cast<unsigned char>(c) <= ' ' || static_cast<unsigned char>(c) >= 0x7f;
			    }))
				return Error(where + "a bearer token is printable ASCII without spaces");
			credential = "Authorization: Bearer " + std::string(token);
		} else if (header_form(line)) {
			if (Status header = check_push_header(line); !header.ok())
				return Error(where + header.error());
			if (lower(line.substr(0, line.find(':'))) != "authorization") {
				auth.headers.emplace_back(line);
				continue;
			}
			credential = std::string(line);
		} else if (const size_t colon = line.find(':'); colon != std::string_view::npos && colon > 0) {
			if (std::any_of(line.begin(), line.end(), [](char c) {
				    return static_cast<unsigned char>(c) < ' ' || c == 0x7f;
			    }))
				return Error(where + "USER:PASSWORD holds a control character");
			credential = "Authorization: Basic " + base64(line);
		} else {
			// The line itself may be a secret: it is not quoted.
			return Error(where + "expected 'Bearer TOKEN', 'USER:PASSWORD' or a 'Name: value' header");
		}
		if (!authorization.empty())
			return Error(where + "a second credential: give one 'Bearer TOKEN', 'USER:PASSWORD' or "
					     "'Authorization: ...' line");
		authorization = std::move(credential);
	}
	// Nothing but comments: no credentials. The systemd unit's fallback when no credential
	// file is installed (SetCredential=); a server that wants some then answers 401.
	if (!authorization.empty())
		auth.headers.insert(auth.headers.begin(), authorization);
	return auth;
}

Status check_secret_file(const struct stat &st, std::string_view acl, uid_t euid)
{
	if (!S_ISREG(st.st_mode))
		return Error("it is not a regular file");
	if (st.st_uid != 0 && st.st_uid != euid)
		return Error("it is owned by uid " + std::to_string(st.st_uid) + ", not root" +
			     (euid ? " nor uid " + std::to_string(euid) + " (this process)" : std::string()) +
			     ": another user could change it");
	const std::string fix = ": chmod 600 it";
	if (acl.empty()) {
		if (!(st.st_mode & 0066))
			return {};
		const bool group = st.st_mode & 0060, others = st.st_mode & 0006;
		const bool read = st.st_mode & 0044, write = st.st_mode & 0022;
		return Error("its mode " + octal_mode(st.st_mode) + " lets " +
			     (group && others ? "its group and others" : group ? "its group" : "others") +
			     (read && write ? " read and write it" : read ? " read it" : " write it") + fix);
	}
	// An ACL (acl(5)): the group bits of the mode are its mask, and named entries may give
	// other users and groups access. systemd gives a service's user its credentials so.
	struct Entry {
		uint16_t tag, perm;
		uint32_t id;
	};
	if (acl.size() < 4 || (acl.size() - 4) % sizeof(Entry) != 0)
		return Error("its ACL cannot be read");
	std::vector<Entry> entries((acl.size() - 4) / sizeof(Entry));
	std::memcpy(entries.data(), acl.data() + 4, acl.size() - 4);
	uint16_t mask = 7;
	for (const Entry &e : entries)
		if (e.tag == 0x10) // ACL_MASK
			mask = e.perm;
	for (const Entry &e : entries) {
		const uint16_t perm = e.perm & 6; // read or write
		switch (e.tag) {
		case 0x02: // ACL_USER
			if ((perm & mask) && e.id != 0 && e.id != euid)
				return Error("its ACL lets uid " + std::to_string(e.id) + " read or write it" + fix +
					     " and setfacl -b it");
			break;
		case 0x04: // ACL_GROUP_OBJ
		case 0x08: // ACL_GROUP
			if (perm & mask)
				return Error("its ACL lets a group read or write it" + fix + " and setfacl -b it");
			break;
		case 0x20: // ACL_OTHER
			if (perm)
				return Error("its mode " + octal_mode(st.st_mode) + " lets others read or write it" +
					     fix);
			break;
		}
	}
	return {};
}

Result<std::string> read_secret_file(const std::string &path)
{
	UniqueFd file(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
	if (!file)
		return Error("cannot open " + path + ": " + std::strerror(errno));
	struct stat st;
	if (fstat(file.get(), &st) != 0)
		return Error("cannot read " + path + ": " + std::strerror(errno));
	char acl[1024];
	ssize_t acl_size = fgetxattr(file.get(), "system.posix_acl_access", acl, sizeof(acl));
	if (acl_size < 0 && errno != ENODATA && errno != ENOTSUP)
		return Error("cannot read the ACL of " + path + ": " + std::strerror(errno));
	if (Status secret = check_secret_file(st, std::string_view(acl, std::max<ssize_t>(acl_size, 0)), geteuid());
	    !secret.ok())
		return Error(path + " holds secrets, but " + secret.error());
	std::string text;
	char buffer[4096];
	while (true) {
		const ssize_t n = read(file.get(), buffer, sizeof(buffer));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return Error("cannot read " + path + ": " + std::strerror(errno));
		if (n == 0)
			break;
		text.append(buffer, size_t(n));
		if (text.size() > secret_file_max)
			return Error(path + " is larger than 64 KiB: not an auth file");
	}
	return text;
}

Status load_push_files(PushConfig &config, const std::string &auth_file)
{
	if (!auth_file.empty()) {
		Result<std::string> text = read_secret_file(auth_file);
		if (!text.ok())
			return Error("--push-auth-file: " + text.error());
		Result<PushAuth> auth = parse_push_auth(*text);
		std::fill(text->begin(), text->end(), '\0');
		if (!auth.ok())
			return Error("--push-auth-file " + auth_file + ": " + auth.error());
		CurlUrl url(curl_url());
		const bool url_credentials = url && curl_url_set(url.get(), CURLUPART_URL, config.url.c_str(), 0) == CURLUE_OK &&
					     !(url_part(url.get(), CURLUPART_USER) + url_part(url.get(), CURLUPART_PASSWORD)).empty();
		if (!auth->headers.empty() && auth->headers[0].starts_with("Authorization:") && url_credentials)
			return Error("--push-auth-file " + auth_file +
				     " and the --push URL both hold credentials: give one");
		config.headers.insert(config.headers.end(), auth->headers.begin(), auth->headers.end());
	}
	const bool https = config.url.starts_with("https://");
	for (auto [option, path] : {std::pair<const char *, const std::string *>{"--push-ca", &config.ca_file},
				    {"--push-cert", &config.cert_file},
				    {"--push-key", &config.key_file}}) {
		if (path->empty())
			continue;
		if (!https)
			return Error(std::string(option) + " is for an https:// URL, and --push names " +
				     url_for_humans(config.url));
		if (path == &config.key_file) {
			Result<std::string> text = read_secret_file(*path);
			if (!text.ok())
				return Error(std::string(option) + ": " + text.error());
			std::fill(text->begin(), text->end(), '\0');
		} else {
			UniqueFd file(open(path->c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY));
			struct stat st;
			if (!file || fstat(file.get(), &st) != 0)
				return Error(std::string(option) + ": cannot open " + *path + ": " +
					     std::strerror(errno));
			if (!S_ISREG(st.st_mode))
				return Error(std::string(option) + ": " + *path + " is not a regular file");
		}
	}
	return {};
}

std::optional<double> parse_retry_after(std::string_view value, time_t now)
{
	value = trim(value);
	if (value.empty())
		return std::nullopt;
	if (std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }))
		return value.size() > 9 ? 1e9 : std::stod(std::string(value));
	const time_t when = curl_getdate(std::string(value).c_str(), nullptr);
	if (when == -1)
		return std::nullopt;
	return when > now ? double(when - now) : 0.0;
}

Status redirect_refusal(const std::string &from, const std::string &to)
{
	CurlUrl a(curl_url()), b(curl_url());
	if (!a || !b || curl_url_set(a.get(), CURLUPART_URL, from.c_str(), 0) != CURLUE_OK ||
	    curl_url_set(b.get(), CURLUPART_URL, to.c_str(), 0) != CURLUE_OK)
		return Error("a Location that cannot be read");
	const std::string scheme = lower(url_part(b.get(), CURLUPART_SCHEME));
	if (lower(url_part(a.get(), CURLUPART_SCHEME)) != scheme)
		return Error("another scheme: " + scheme);
	const std::string host = lower(url_part(b.get(), CURLUPART_HOST));
	if (lower(url_part(a.get(), CURLUPART_HOST)) != host)
		return Error("another host: " + host);
	const std::string port = url_part(b.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT);
	if (url_part(a.get(), CURLUPART_PORT, CURLU_DEFAULT_PORT) != port)
		return Error("another port: " + port);
	return {};
}
