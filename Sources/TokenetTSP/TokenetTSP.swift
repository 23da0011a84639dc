/// The TSP party's services.
enum TokenetTSPModule {}
