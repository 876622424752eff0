#include "hourglass/http_message.h"

#include <algorithm>
#include <boost/url/parse.hpp>
#include <boost/url/src.hpp>  // Boost.URL compiled here, header-only: Debian ships no library
#include <cctype>

namespace hourglass {
namespace {

const std::string* FindIn(const std::vector<HttpField>& fields, std::string_view name) {
  for (const HttpField& f : fields) {
    if (SameFieldName(f.name, name)) return &f.value;
  }
  return nullptr;
}

// Whether `target` is a path of unreserved characters (RFC 3986 2.3) and '/' alone, starting with
// '/': an origin form with nothing to decode and no query, the path being the target itself.
bool PlainPath(std::string_view target) {
  if (target.empty() || target.front() != '/') return false;
  return std::all_of(target.begin(), target.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
           c == '-' || c == '.' || c == '_' || c == '~';
  });
}

}  // namespace

std::string_view MethodName(HttpMethod method) {
  switch (method) {
    case HttpMethod::kGet:
      return "GET";
    case HttpMethod::kHead:
      return "HEAD";
    case HttpMethod::kPost:
      return "POST";
    case HttpMethod::kPut:
      return "PUT";
    case HttpMethod::kDelete:
      return "DELETE";
    case HttpMethod::kPatch:
      return "PATCH";
    case HttpMethod::kOptions:
      return "OPTIONS";
    case HttpMethod::kOther:
      break;
  }
  return "OTHER";
}

bool SameFieldName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

Result<RequestTarget> ParseTarget(std::string_view target) {
  if (PlainPath(target)) return RequestTarget{std::string(target), {}};  // every check's
  boost::system::result<boost::urls::url_view> url = boost::urls::parse_origin_form(target);
  if (!url) return InvalidArgument("malformed request target");
  RequestTarget out;
  out.path = url->path();
  for (const auto& param : url->params()) out.params.push_back({param.key, param.value});
  return out;
}

const std::string* HttpRequest::Find(std::string_view name) const { return FindIn(fields_, name); }

void HttpRequest::Add(std::string name, std::string value) {
  fields_.push_back({std::move(name), std::move(value)});
}

const std::string* HttpResponse::Find(std::string_view name) const { return FindIn(fields_, name); }

void HttpResponse::Set(std::string_view name, std::string value) {
  for (HttpField& f : fields_) {
    if (SameFieldName(f.name, name)) {
      f.value = std::move(value);
      return;
    }
  }
  fields_.push_back({std::string(name), std::move(value)});
}

}  // namespace hourglass
