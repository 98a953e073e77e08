"""What damage detection costs (`check_cost`), and the start race run with real processes (`start_race`)."""
