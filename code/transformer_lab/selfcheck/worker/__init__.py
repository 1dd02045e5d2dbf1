"""Running a student's code: :mod:`.isolation` picks where (bubblewrap, an unprivileged user, or a
plain process), :mod:`.parent` starts, times and ends the worker, :mod:`.serve` is the worker."""
