#pragma once

/// Umbrella header of tdrl::collectors: Collector, MultiSyncCollector and MultiAsyncCollector
/// (threads), DistributedCollector (processes) and the collector policy.

#include <tdrl/collectors/collector.h>
#include <tdrl/collectors/distributed_collector.h>
#include <tdrl/collectors/multi_collector.h>
#include <tdrl/collectors/policy.h>
