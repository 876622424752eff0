// The commands of the hourglass CLI, one file each under commands/. Each registers its
// subcommand, options, help and examples on `app` and returns what runs when it was parsed.
#pragma once

#include <optional>

#include "app.h"
#include "hourglass/policy_file.h"
#include "runtime.h"

namespace hourglass::cli {

Command AddHitCommand(CLI::App& app, const Globals& g);
Command AddCountCommand(CLI::App& app, const Globals& g);
Command AddCheckCommand(CLI::App& app, const Globals& g);
Command AddInspectCommand(CLI::App& app, const Globals& g);
Command AddResetCommand(CLI::App& app, const Globals& g);
Command AddReplayCommand(CLI::App& app, const Globals& g);
Command AddPolicyCommand(CLI::App& app, const Globals& g);
Command AddServeCommand(CLI::App& app, const Globals& g);
Command AddTopCommand(CLI::App& app, const Globals& g);
Command AddAuditCommand(CLI::App& app, const Globals& g);

// --policy FILE on a command that records or reads counters without deciding (hit, count,
// inspect, reset): the file the event should be in. FeatureIn returns the feature as the file
// counts it (an IP event's feature is its network, "2001:db8:1:2::/64"), warns on stderr when the
// event is not in the file (a typo counts or resets nothing useful), and leaves with exit 2 for a
// bad file or an IP event's feature that is not an address. Without a file: `feature` as given.
void AddPolicyCheckOption(CLI::App* sub, std::string& path);
std::string FeatureIn(const std::string& path, const std::string& event,
                      const std::string& feature);
// FeatureIn's feature with the policy the file gives it (none without a file or an entry): its
// block_for says which penalty count and inspect show and reset lifts.
Resolved PolicyIn(const std::string& path, const std::string& event, const std::string& feature);
// For count and inspect given the event's limits: the engine use (exact retries: "free at" to
// the second), and what a hit at `at` would get (a peek, nothing recorded); nullopt without limits.
EngineUse ReadingUse(const Resolved& resolved);
std::optional<Decision> PeekUnder(const Engine& engine, const std::string& event,
                                  const Resolved& resolved, Instant at);

}  // namespace hourglass::cli
