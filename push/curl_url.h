// push/curl_url.h: a URL parsed by libcurl, owned, and its parts read back.
#pragma once

#include <curl/curl.h>

#include <string>

#include "base/handle.h"

using CurlUrl = Handle<CURLU, curl_url_cleanup>;

// One part of a parsed URL, "" when it has none.
std::string url_part(CURLU *url, CURLUPart part, unsigned flags = 0);
