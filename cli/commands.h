// The commands of the hourglass CLI, one file each under commands/. Each registers its
// subcommand, options, help and examples on `app` and returns what runs when it was parsed.
#pragma once

#include "app.h"

namespace hourglass::cli {

Command AddHitCommand(CLI::App& app, const Globals& g);
Command AddCountCommand(CLI::App& app, const Globals& g);
Command AddCheckCommand(CLI::App& app, const Globals& g);
Command AddInspectCommand(CLI::App& app, const Globals& g);
Command AddResetCommand(CLI::App& app, const Globals& g);
Command AddReplayCommand(CLI::App& app, const Globals& g);
Command AddPolicyCommand(CLI::App& app, const Globals& g);
Command AddServeCommand(CLI::App& app, const Globals& g);

// --policy FILE on a command that records or reads counters without deciding (hit, count,
// inspect, reset): the file the event should be in. WarnIfUndefined warns on stderr when it is
// not (a typo counts or resets nothing useful); a bad file is exit 2.
void AddPolicyCheckOption(CLI::App* sub, std::string& path);
void WarnIfUndefined(const std::string& path, const std::string& event);

}  // namespace hourglass::cli
