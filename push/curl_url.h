// push/curl_url.h: a URL parsed by libcurl, owned, and its parts read back.
#pragma once

#include <curl/curl.h>

#include <memory>
#include <string>

struct CurlUrlDelete {
	void operator()(CURLU *url) const { curl_url_cleanup(url); }
};
using CurlUrl = std::unique_ptr<CURLU, CurlUrlDelete>;

// One part of a parsed URL, "" when it has none.
std::string url_part(CURLU *url, CURLUPart part, unsigned flags = 0);
