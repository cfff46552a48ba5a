# Copyright: ascend.cluster contributors
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The support bundle (playbook collect): what each server gathers, scrubbed and capped, and the bundle it makes."""
