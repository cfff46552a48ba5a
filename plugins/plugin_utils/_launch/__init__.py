# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The launch on the controller: pre-flight verdicts, clocks, staging, the watch, restarts, reports, diagnosis."""
