// hourglass audit LOG...: every decision of the services' audit logs (serve --audit-log),
// recomputed with an exact sliding log of the hits they counted: over-admissions, needless
// denials and count errors per event.
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "../commands.h"
#include "hourglass/auditor.h"
#include "hourglass/display_text.h"
#include "hourglass/json.h"

namespace hourglass::cli {
namespace {

using nlohmann::json;

struct AuditArgs {
  std::vector<std::string> logs;
};

// Reads every line of `path` into `auditor`; a bad line leaves with exit 2 naming it. A last line
// without its newline is one the service is still writing: left out, and said so.
uint64_t ReadLog(const std::string& path, Auditor& auditor) {
  std::ifstream in(path, std::ios::binary);
  if (!in) Fail(kUsage, fmt::format("{}: cannot be read", DisplayText(path)));
  std::string line;
  uint64_t number = 0, records = 0;
  while (std::getline(in, line)) {
    ++number;
    if (in.eof()) {
      fmt::print(stderr, "note: {}:{}: an unfinished last line is left out\n", DisplayText(path),
                 number);
      break;
    }
    if (line.empty()) continue;
    Result<AuditRecord> record = ParseAuditLine(line);
    if (!record.ok()) {
      Fail(kUsage, fmt::format("{}:{}: not an audit line: {}", DisplayText(path), number,
                               record.error().message()));
    }
    auditor.Add(std::move(*record));
    ++records;
  }
  return records;
}

json RowJson(const AuditRow& row) {
  return {{"decisions", row.decisions},
          {"admitted", row.admitted},
          {"denied", row.denied},
          {"over_admissions", row.over_admissions},
          {"needless_denials", row.needless_denials},
          {"count_errors", row.count_errors},
          {"count_error_max", row.count_error_max},
          {"degraded", row.degraded},
          {"order_dependent", row.order_dependent}};
}

std::string RowText(const std::string& name, const AuditRow& row) {
  return fmt::format("{:<24} {:>10} {:>9} {:>8} {:>16} {:>17} {:>13} {:>9} {:>16}\n", name,
                     row.decisions, row.admitted, row.denied, row.over_admissions,
                     row.needless_denials,
                     fmt::format("{} ({})", row.count_errors, row.count_error_max), row.degraded,
                     row.order_dependent);
}

int RunAudit(const Globals& g, const AuditArgs& a) {
  Auditor auditor;
  uint64_t records = 0;
  for (const std::string& path : a.logs) records += ReadLog(path, auditor);
  const AuditReport report = auditor.Report();
  if (g.json) {
    json events = json::object();
    for (const auto& [event, row] : report.events) events[event] = RowJson(row);
    Print(Dump({{"files", a.logs.size()},
                {"decisions", records},
                {"features", report.features},
                {"events", events},
                {"total", RowJson(report.total)}}) +
          "\n");
  } else {
    const auto plural = [](uint64_t n, const char* noun) {
      return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
    };
    std::string out =
        fmt::format("audited {} of {} and {}, from {}\n", plural(records, "decision"),
                    plural(report.events.size(), "event"), plural(report.features, "feature"),
                    plural(a.logs.size(), "file"));
    out += fmt::format("{:<24} {:>10} {:>9} {:>8} {:>16} {:>17} {:>13} {:>9} {:>16}\n", "event",
                       "decisions", "admitted", "denied", "over-admissions", "needless denials",
                       "count errors", "degraded", "order-dependent");
    for (const auto& [event, row] : report.events) out += RowText(DisplayText(event), row);
    if (report.events.size() > 1) out += RowText("(all)", report.total);
    out += report.total.errors() == 0
               ? "no errors: every decision is the one an exact sliding-window limiter makes on "
                 "these hits\n"
               : fmt::format(
                     "{} errors: decisions an exact limiter would not have made on "
                     "these hits\n",
                     report.total.errors());
    Print(out);
  }
  return report.total.errors() == 0 ? kOk : kDenied;
}

}  // namespace

Command AddAuditCommand(CLI::App& app, const Globals& g) {
  auto args = std::make_shared<AuditArgs>();
  CLI::App* sub = app.add_subcommand(
      "audit",
      "Recompute the decisions of audit logs (serve --audit-log) exactly, and count "
      "what the limiter got wrong");
  sub->add_option("LOG", args->logs,
                  "audit logs of every service that decides the same events (rotated files too)")
      ->required()
      ->check(CLI::ExistingFile);
  sub->footer(
      "Each decision is judged against an exact log of the hits all the logs' decisions left\n"
      "counted: an over-admission let a client through although a window could not hold its\n"
      "hits; a needless denial refused one that every window could hold; a count error reported a\n"
      "count no order of its second's hits makes true. Decisions of one second have no order\n"
      "between services, nor have decisions in flight together (a line's at to its done): those\n"
      "whose judgement depends on it are order-dependent, not errors.\n"
      "Degraded decisions (the store failed or lost counts) are counted apart. A reset, a\n"
      "settlement or a CLI hit meanwhile is not in the logs and shows as errors.\n"
      "Exit 0: no errors; 1: errors found; 2: a file that cannot be read or a bad line.\n"
      "Examples:\n"
      "  hourglass audit /var/log/hourglass/audit*.log\n"
      "  hourglass --json audit a/audit.log b/audit.log");
  return {sub, [&g, args] { return RunAudit(g, *args); }};
}

}  // namespace hourglass::cli
