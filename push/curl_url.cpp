// push/curl_url.cpp: the parts of a URL libcurl parsed.
#include "push/curl_url.h"

std::string url_part(CURLU *url, CURLUPart part, unsigned flags)
{
	char *text = nullptr;
	if (curl_url_get(url, part, &text, flags) != CURLUE_OK || !text)
		return "";
	std::string out = text;
	curl_free(text);
	return out;
}
